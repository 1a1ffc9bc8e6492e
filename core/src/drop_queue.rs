//! (filled by the foundation work)
