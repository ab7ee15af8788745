//! The names of MCP's methods (2024-11-05 to 2026-07-28), written once: code that
//! matches on a method names it by one of these, so a misspelling is a compile error.

/// Starts a session (every revision before 2026-07-28).
pub const INITIALIZE: &str = "initialize";
/// Liveness check, either way.
pub const PING: &str = "ping";
/// What a 2026-07-28 server offers (no session).
pub const SERVER_DISCOVER: &str = "server/discover";
/// The server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Calls a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// The server's resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// The server's resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Reads a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Asks to be told when a resource changes.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Stops being told.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// The server's prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Gets a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Completes an argument of a prompt or a resource template.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Sets the server's log level.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// The server asks the client's model (server to client).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// The server asks the person a question (server to client).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// The server asks for the client's roots (server to client).
pub const ROOTS_LIST: &str = "roots/list";
/// A task's state (tasks extension).
pub const TASKS_GET: &str = "tasks/get";
/// A task's result.
pub const TASKS_RESULT: &str = "tasks/result";
/// The tasks of a session.
pub const TASKS_LIST: &str = "tasks/list";
/// Cancels a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Opens a stream of change notifications (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// The client's session is ready (after `initialize`).
pub const INITIALIZED: &str = "notifications/initialized";
/// A request was cancelled, either way.
pub const CANCELLED: &str = "notifications/cancelled";
/// Progress of a request.
pub const PROGRESS: &str = "notifications/progress";
/// A log message from the server.
pub const MESSAGE: &str = "notifications/message";
/// The server's tools changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The server's prompts changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// The server's resources changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// A subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// The client's roots changed.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// Every request method above, for code that keeps one copy of a method's name.
pub const REQUESTS: [&str; 22] = [
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    SAMPLING_CREATE_MESSAGE,
    ELICITATION_CREATE,
    ROOTS_LIST,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
    SUBSCRIPTIONS_LISTEN,
];
