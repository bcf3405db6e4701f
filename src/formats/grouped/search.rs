//! grouped_search (spec §7.3).
