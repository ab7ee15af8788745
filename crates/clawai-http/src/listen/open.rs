//! Opening a session with the server: its guard (remembering in the session store under
//! the session's id), and its link to a child, a remote server or the gateway.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::response::Response;
use clawai_protocol::reply;
use clawai_proxy::Guard;

use super::{Front, Upstream, json_error};
use crate::child;
use crate::remote;
use crate::session::Session;

impl Front {
    /// A session with the server. `shared`: the session id its memory is kept under in
    /// the session store (claimed there first in cluster mode); `None` for the stateless
    /// sessions, whose memory stays in this process.
    pub(super) async fn open_session(
        &self,
        remaps_ids: bool,
        shared: Option<&str>,
    ) -> Result<Arc<Session>, Box<Response>> {
        let guard = Guard::new(self.policy.clone(), self.audit.clone(), self.options.server.clone())
            .with_ask_options(self.options.ask.clone());
        let guard = match shared {
            Some(id) => guard
                .remembering_in(Arc::new(clawai_policy::Session::in_memory(self.options.ask.stores.sessions.open(id)))),
            None => guard,
        };
        let guard = match &self.upstream {
            Upstream::Command(_) | Upstream::InProcess(_) => guard,
            Upstream::Remote(_) => guard.for_remote_server(),
        };
        let guard = match &self.options.pins {
            Some(pins) => guard.with_pins(Arc::clone(pins)),
            None => guard,
        };
        // Requests of the shared stateless session travel under ids of clawai's; the
        // trail shows the ones the clients sent.
        let guard = if remaps_ids { guard.showing_client_ids() } else { guard };
        let mut client_authorization = None;
        let (link, child) = match &self.upstream {
            Upstream::Command(command) => {
                let unavailable = |error: &dyn std::fmt::Display| {
                    Box::new(json_error(
                        StatusCode::BAD_GATEWAY,
                        reply::SERVER_UNAVAILABLE,
                        &format!("clawai: {error}"),
                    ))
                };
                let sandbox = match self.options.sandbox.is_on() {
                    true => {
                        let context = clawai_proxy::sandbox::ServerContext::here(command, None);
                        // On a runtime worker, which lives as long as the runtime: the
                        // sandbox may die with it (see the gateway's upstreams).
                        Some(
                            clawai_proxy::sandbox::prepare(&self.options.sandbox, &context, true)
                                .map_err(|e| unavailable(&e))?,
                        )
                    }
                    false => None,
                };
                let (link, child, report) =
                    child::spawn_sandboxed(command, sandbox, self.options.max_message).map_err(|e| unavailable(&e))?;
                if let Some(report) = report {
                    clawai_proxy::sandboxed::announce(&guard, &report);
                }
                (link, Some(child))
            }
            Upstream::Remote(options) => {
                let mut options = options.clone();
                // The client's token goes to this upstream, for which it was issued;
                // not when it is clawai's own token (--auth-token-env).
                if self.options.auth_token.is_none() {
                    let slot = Arc::new(Mutex::new(None));
                    options.client_authorization = Some(Arc::clone(&slot));
                    client_authorization = Some(slot);
                }
                (remote::connect(options, self.options.max_message), None)
            }
            Upstream::InProcess(server) => {
                let link = server.open_link(shared).map_err(|error| {
                    Box::new(json_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        reply::SERVER_UNAVAILABLE,
                        &format!("clawai: {error}"),
                    ))
                })?;
                (link, None)
            }
        };
        Ok(Session::start(guard, link, child, remaps_ids, self.options.max_message, client_authorization))
    }
}
