//! `search_tools {query, limit?}`: the tools of every server and the skills, ranked for
//! a query. Filtered before ranking: a tool no skill ∩ `agent.allowedTools` could show
//! this caller, or one the policy denies whatever its arguments, is never a result. A
//! hit the session cannot see now names the skills that would show it.

use std::sync::Arc;

use clawai_protocol::methods;
use clawai_proxy::guard::OwnVerdict;
use serde_json::Value;

use super::Session;
use crate::lists::ListKind;
use crate::search::hybrid;
use crate::search::render::{self, Found};
use crate::tool_search::SEARCH_TOOL;

impl Session {
    /// Answers `search_tools`.
    pub(super) fn search_tools(&self, id: &Value, message: &Value, modern: bool) {
        let doing = "searched the tools this session can see";
        if let OwnVerdict::Refuse(refusal) =
            self.decide_own(methods::TOOLS_CALL, id, SEARCH_TOOL, message, modern, doing)
        {
            return self.send(refusal);
        }
        let render::Arguments { query, limit } = match render::arguments(message.pointer("/params/arguments")) {
            Ok(arguments) => arguments,
            Err(why) => {
                let why = format!("clawai gateway: {why}");
                return self.send(crate::rewrite::error(id, clawai_protocol::codes::INVALID_PARAMS, &why));
            }
        };
        let view = self.view();
        let catalog = Arc::clone(&view.catalog);
        let skills = Arc::clone(&view.skills);
        let (_, always_denied) = self.core.always_denied(&catalog);
        let allowed_tools = self.core.allowed_tools();
        let (index, serial) = self.core.search_index(&catalog, &skills);
        let tools = catalog.len(ListKind::Tools);
        // Which skills would show tool `position` (with the agent's scope), if any; for
        // a tool of a server that is not internal, no skill is needed.
        let showing = |position: usize| -> Option<Vec<String>> {
            let item = catalog.item(ListKind::Tools, position);
            let name = &item.listed.full_name;
            if always_denied.get(position).copied().unwrap_or(false)
                || !allowed_tools.as_deref().is_none_or(|allowed| allowed.is_match(name))
            {
                return None;
            }
            // A server that is not internal is shown also by skills without
            // `allowed-tools`, and with no skill active.
            let internal = item.upstream.entry.internal_only;
            let by: Vec<String> = skills
                .skills
                .iter()
                .filter(|skill| skill.shows(name).unwrap_or(!internal))
                .map(|s| s.listed_name())
                .collect();
            (!internal || !by.is_empty()).then_some(by)
        };
        // Asked once per document and search, whichever ranking asks first.
        let admitted = std::cell::RefCell::new(vec![None::<bool>; index.len()]);
        let admit = |id: usize| {
            let known = admitted.borrow().get(id).copied().flatten();
            known.unwrap_or_else(|| {
                let verdict = id >= tools || showing(id).is_some();
                if let Some(slot) = admitted.borrow_mut().get_mut(id) {
                    *slot = Some(verdict);
                }
                verdict
            })
        };
        let semantic = self.core.options.search_model.as_ref().and_then(|model| {
            let vectors = model.vectors(serial)?;
            Some((vectors, model.query(query)?))
        });
        let semantic = semantic.as_ref().map(|(vectors, query_vector)| (vectors.as_ref(), query_vector.as_ref()));
        let hits = hybrid::rank(&index, semantic, query, limit, admit);
        let allowed = self.core.allowed_tools();
        let visible_now = |name: &str| view.find(ListKind::Tools, name, allowed.as_deref()).is_some();
        let mut found = Vec::with_capacity(hits.len());
        for hit in hits {
            let (name, server, description, skills_showing) = if hit.id < tools {
                let item = catalog.item(ListKind::Tools, hit.id);
                let tool: Value = serde_json::from_str(item.listed.json.get()).unwrap_or(Value::Null);
                let description = tool.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
                (
                    item.listed.listed.clone(),
                    item.upstream.name.clone(),
                    description,
                    showing(hit.id).unwrap_or_default(),
                )
            } else {
                let skill = &skills.skills[hit.id - tools];
                (skill.listed_name(), "skill".to_owned(), skill.description().to_owned(), Vec::new())
            };
            let visible = hit.id >= tools || visible_now(&name);
            found.push((name, server, description, visible, skills_showing, hit.score));
        }
        let found: Vec<Found> = found
            .iter()
            .map(|(name, server, description, visible, skills, score)| Found {
                name,
                server,
                description,
                visible: *visible,
                skills,
                score: *score,
            })
            .collect();
        let starting = self.servers_not_up_for_search();
        let result = render::answer(&found, &starting);
        self.answer(id, result, modern);
    }
}
