//! Compiles cli/src/import.rs with its unit tests (the binary's main.rs is wired by the
//! CLI; this keeps the importer tested on its own).

#[path = "../src/alloc.rs"]
mod alloc;
#[allow(dead_code)]
#[path = "../src/import.rs"]
mod import;
