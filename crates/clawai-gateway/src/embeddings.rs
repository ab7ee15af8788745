//! The embedding side of `search_tools`: a model loaded and run off the request path.
//!
//! [`SearchModel::start`] returns at once; one background thread loads the model, then
//! embeds the documents of each new search index (tools: name, description, parameters;
//! skills: name, description, body). A listing, a call or start-up never waits for it: until
//! a document is embedded it is ranked lexically only. Vectors are kept by text, so a
//! catalog change embeds only the tools whose text changed. A query is embedded once, on
//! the searching thread (a short text: milliseconds), and remembered for repeats.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::lock;
use crate::search::vectors::Vectors;

/// A sentence-embedding model: unit-length vectors of one dimension, one per text.
pub trait Embed: Send + Sync {
    /// The vectors of `texts`, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;

    /// The vector of one search query (a model may have a faster way for a few tokens).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        let mut vectors = self.embed(&[query])?;
        if vectors.len() == 1 { Ok(vectors.remove(0)) } else { Err("the model gave no vector".to_owned()) }
    }

    /// A pass over the catalog ended: what it allocated and freed may go back to the
    /// system (the model knows how its memory is kept).
    fn pass_ended(&self) {}
}

/// Loads the model, on the background thread.
pub type LoadModel = Box<dyn FnOnce() -> Result<Arc<dyn Embed>, String> + Send>;

/// Documents embedded in one go between checks for a newer catalog.
const CHUNK: usize = 64;
/// How often vectors of a catalog still being embedded are published.
const PUBLISH_EVERY: Duration = Duration::from_millis(500);
/// Queries remembered with their vectors (a model asks again with the same words).
const QUERIES_KEPT: usize = 512;

/// Makes the texts of a search index's documents (on the embedding thread).
pub(crate) type Texts = Box<dyn FnOnce() -> Vec<String> + Send>;

/// The documents of one search index, to embed.
struct Job {
    serial: u64,
    texts: Texts,
}

/// State shared by the searching threads and the embedding thread.
#[derive(Default)]
struct Shared {
    model: OnceLock<Arc<dyn Embed>>,
    /// The vectors of the newest index embedded (fully or so far), by index serial.
    ready: Mutex<Option<(u64, Arc<Vectors>)>>,
    queries: Mutex<HashMap<String, Arc<[f32]>>>,
}

/// A model for `search_tools`, loaded and run in the background.
#[derive(Clone)]
pub struct SearchModel {
    shared: Arc<Shared>,
    jobs: Sender<Job>,
}

impl std::fmt::Debug for SearchModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchModel").field("loaded", &self.shared.model.get().is_some()).finish()
    }
}

impl SearchModel {
    /// Starts the background thread that runs `load` and then embeds each catalog.
    /// A model that fails to load is logged; search then stays lexical.
    pub fn start(load: LoadModel) -> SearchModel {
        let shared = Arc::new(Shared::default());
        let (jobs, receiver) = channel();
        let background = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("clawai-embed".to_owned())
            .spawn(move || run(&background, load, &receiver));
        if let Err(error) = spawned {
            tracing::error!("search_tools: cannot start the embedding thread ({error}); ranking stays lexical");
        }
        SearchModel { shared, jobs }
    }

    /// Asks for the documents of index `serial` to be embedded (a newer request replaces
    /// an older one not yet done). `texts` runs on the embedding thread, so that the
    /// thread that saw the catalog change does not wait for it.
    pub(crate) fn index_changed(&self, serial: u64, texts: Texts) {
        // The thread is gone only if it could not start; it was logged then.
        let _ = self.jobs.send(Job { serial, texts });
    }

    /// The vectors of index `serial`, as far as they are embedded; `None` before any.
    pub(crate) fn vectors(&self, serial: u64) -> Option<Arc<Vectors>> {
        match lock(&self.shared.ready).as_ref() {
            Some((ready, vectors)) if *ready == serial => Some(Arc::clone(vectors)),
            _ => None,
        }
    }

    /// Whether the model is loaded (searches can be embedded).
    pub fn is_loaded(&self) -> bool {
        self.shared.model.get().is_some()
    }

    /// The vector of `query`; `None` while the model is loading or if it fails on it.
    pub(crate) fn query(&self, query: &str) -> Option<Arc<[f32]>> {
        let model = self.shared.model.get()?;
        if let Some(vector) = lock(&self.shared.queries).get(query) {
            return Some(Arc::clone(vector));
        }
        let vector: Arc<[f32]> = match model.embed_query(query) {
            Ok(vector) => vector.into(),
            Err(error) => {
                tracing::warn!("search_tools: the query was not embedded ({error}); ranked lexically");
                return None;
            }
        };
        let mut queries = lock(&self.shared.queries);
        if queries.len() >= QUERIES_KEPT {
            queries.clear();
        }
        queries.insert(query.to_owned(), Arc::clone(&vector));
        Some(vector)
    }
}

/// A job whose texts are made.
struct Done {
    serial: u64,
    texts: Vec<String>,
}

/// The embedding thread: loads the model, then embeds each newest job.
fn run(shared: &Shared, load: LoadModel, jobs: &Receiver<Job>) {
    let started = Instant::now();
    let model = match load() {
        Ok(model) => model,
        Err(error) => {
            tracing::error!("search_tools: the embedding model did not load: {error}; ranking stays lexical");
            return;
        }
    };
    tracing::info!("search_tools: embedding model loaded in {:.1} s", started.elapsed().as_secs_f64());
    let _ = shared.model.set(Arc::clone(&model));
    let mut by_text: HashMap<String, Arc<[f32]>> = HashMap::new();
    let mut pending = jobs.recv().ok();
    while let Some(job) = pending.take() {
        let newest = jobs.try_iter().last();
        let job = newest.unwrap_or(job);
        pending = embed_job(shared, model.as_ref(), &mut by_text, job, jobs);
        if pending.is_none() {
            pending = jobs.recv().ok();
        }
    }
}

/// Embeds one job's documents, publishing as it goes; returns a newer job that arrived
/// meanwhile (the rest of this one is then left: its index is no longer searched).
fn embed_job(
    shared: &Shared,
    model: &dyn Embed,
    by_text: &mut HashMap<String, Arc<[f32]>>,
    job: Job,
    jobs: &Receiver<Job>,
) -> Option<Job> {
    let started = Instant::now();
    let job = (job.serial, (job.texts)());
    let job = Done { serial: job.0, texts: job.1 };
    let dimension = by_text.values().next().map(|v| v.len());
    let missing: Vec<usize> = (0..job.texts.len()).filter(|&i| !by_text.contains_key(&job.texts[i])).collect();
    let publish = |by_text: &HashMap<String, Arc<[f32]>>| {
        let Some(dimension) = dimension.or_else(|| by_text.values().next().map(|v| v.len())) else { return };
        let mut vectors = Vectors::new(job.texts.len(), dimension);
        for (id, text) in job.texts.iter().enumerate() {
            if let Some(vector) = by_text.get(text) {
                vectors.set(id, vector);
            }
        }
        *lock(&shared.ready) = Some((job.serial, Arc::new(vectors)));
    };
    let mut published = Instant::now();
    for chunk in missing.chunks(CHUNK) {
        let texts: Vec<&str> = chunk.iter().map(|&i| job.texts[i].as_str()).collect();
        match model.embed(&texts) {
            Ok(vectors) => {
                for (&i, vector) in chunk.iter().zip(vectors) {
                    by_text.insert(job.texts[i].clone(), vector.into());
                }
            }
            Err(error) => tracing::warn!("search_tools: {} documents were not embedded ({error})", chunk.len()),
        }
        if let Ok(newer) = jobs.try_recv() {
            return Some(jobs.try_iter().last().unwrap_or(newer));
        }
        if published.elapsed() >= PUBLISH_EVERY {
            publish(by_text);
            published = Instant::now();
        }
    }
    // Vectors of texts no longer in the catalog are dropped.
    let current: std::collections::HashSet<&str> = job.texts.iter().map(String::as_str).collect();
    by_text.retain(|text, _| current.contains(text.as_str()));
    publish(by_text);
    if !missing.is_empty() {
        model.pass_ended();
    }
    if !missing.is_empty() {
        tracing::info!(
            "search_tools: {} documents embedded ({} new in {:.1} s)",
            job.texts.len(),
            missing.len(),
            started.elapsed().as_secs_f64()
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::{Embed, SearchModel};

    /// A model whose vector says how long the text is; counts the texts it embeds.
    struct Lengths(Arc<AtomicUsize>);

    impl Embed for Lengths {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    fn started(counter: &Arc<AtomicUsize>) -> SearchModel {
        let counter = Arc::clone(counter);
        SearchModel::start(Box::new(move || Ok(Arc::new(Lengths(counter)) as Arc<dyn Embed>)))
    }

    fn wait_for<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(value) = ready() {
                return value;
            }
            assert!(Instant::now() < deadline, "{what} did not happen");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_catalog_is_embedded_in_the_background_and_unchanged_texts_are_not_embedded_again() {
        let counter = Arc::new(AtomicUsize::new(0));
        let model = started(&counter);
        model.index_changed(1, Box::new(|| vec!["a".into(), "bb".into()]));
        let first = wait_for("embedding", || model.vectors(1).filter(|v| v.embedded() == 2));
        assert_eq!(first.documents(), 2);
        assert!(model.vectors(0).is_none());
        model.index_changed(2, Box::new(|| vec!["bb".into(), "ccc".into(), "a".into()]));
        let second = wait_for("re-embedding", || model.vectors(2).filter(|v| v.embedded() == 3));
        assert_eq!(second.nearest(&[3.0, 1.0], 1, |_| true)[0].id, 1);
        assert_eq!(counter.load(Ordering::SeqCst), 3, "only `ccc` was new");
    }

    #[test]
    fn a_query_is_embedded_once() {
        let counter = Arc::new(AtomicUsize::new(0));
        let model = started(&counter);
        wait_for("the model", || model.is_loaded().then_some(()));
        let first = model.query("find memory tools").expect("embedded");
        let again = model.query("find memory tools").expect("embedded");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(counter.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_model_that_fails_to_load_leaves_search_lexical() {
        let model = SearchModel::start(Box::new(|| Err("no weights".to_owned())));
        model.index_changed(1, Box::new(|| vec!["a".into()]));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!model.is_loaded());
        assert!(model.query("anything").is_none());
        assert!(model.vectors(1).is_none());
    }
}
