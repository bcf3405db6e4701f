//! One module per subcommand.

pub mod decode;
pub mod formats;
pub mod inspect;
pub mod verify;
