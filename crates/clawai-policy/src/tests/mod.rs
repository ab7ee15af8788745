//! Tests of whole policies, loaded from text and then decided: they use `load`, so
//! they live above every module rather than in the modules `load` itself uses
//! (`engine`, `session`), which would otherwise name `load` back.

mod engine;
mod session;
