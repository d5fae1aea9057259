//! Loading ONNX Runtime, in a process of its own (ONNX Runtime is loaded
//! once per process, so these steps must run in this order, before anything
//! else loads it): a missing or broken library is an error, not ort's panic,
//! and leaves nothing behind; the real one then loads; another path after
//! that is refused.

use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_learning::embedder::{
    EmbedError, Embedder, EmbedderConfig, FETCH_HINT, MODEL_FILE, ORT_LIBRARY_FILE, TOKENIZER_FILE,
};

#[test]
fn runtime_library_errors_then_the_real_one() {
    let real = EmbedderConfig::default();
    let real_library = real.ort_library_path();
    assert!(real_library.is_file(), "ONNX Runtime not found at {}: {FETCH_HINT}", real_library.display());

    // A models dir whose library is missing.
    let tmp = tempfile::tempdir().unwrap();
    let dir = EmbedderConfig::in_dir(tmp.path()).model_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for file in [MODEL_FILE, TOKENIZER_FILE] {
        std::fs::copy(real.model_dir().join(file), dir.join(file)).unwrap();
    }
    let err = OnnxEmbedder::open(&EmbedderConfig::in_dir(tmp.path())).unwrap_err();
    assert!(matches!(err, EmbedError::AssetMissing { what: "ONNX Runtime library", .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&*tmp.path().join(ORT_LIBRARY_FILE).to_string_lossy()) && msg.contains(FETCH_HINT), "{msg}");

    // A library file that is not a shared object: dlopen fails, an error.
    std::fs::write(tmp.path().join(ORT_LIBRARY_FILE), b"not an ELF file").unwrap();
    let err = OnnxEmbedder::open(&EmbedderConfig::in_dir(tmp.path())).unwrap_err();
    assert!(matches!(err, EmbedError::OrtLibrary { .. }), "{err:?}");
    assert!(err.to_string().contains(&*tmp.path().join(ORT_LIBRARY_FILE).to_string_lossy()), "{err}");

    // The failures left nothing behind: the real library loads.
    let config = EmbedderConfig { ort_library: Some(real_library.clone()), ..EmbedderConfig::in_dir(tmp.path()) };
    let e = OnnxEmbedder::open(&config).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.embed("hello").unwrap().len(), e.dim());

    // Once loaded, another library path is refused (ort would silently keep
    // the first one).
    let other = tmp.path().join("copy-of-libonnxruntime.so");
    std::fs::copy(&real_library, &other).unwrap();
    let err = OnnxEmbedder::open(&EmbedderConfig { ort_library: Some(other), ..config.clone() }).unwrap_err();
    assert!(matches!(err, EmbedError::OrtLibraryConflict { .. }), "{err:?}");

    // The same library through a symlink is the same library.
    let link = tmp.path().join("libonnxruntime.so");
    std::os::unix::fs::symlink(&real_library, &link).unwrap();
    OnnxEmbedder::open(&EmbedderConfig { ort_library: Some(link), ..config }).unwrap_or_else(|e| panic!("{e}"));
}
