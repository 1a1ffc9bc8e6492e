//! Per-stream memory pools (filled by the memory work).
