//! One module per subcommand.

pub mod bench;
pub mod decode;
pub mod formats;
pub mod import;
pub mod inspect;
pub mod quantize;
pub mod st_files;
pub mod verify;
