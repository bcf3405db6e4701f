//! grouped_absmax (spec §7.2).
