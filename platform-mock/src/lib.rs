//! A deterministic simulated GPU platform for streamcore (filled by the mock work).

pub mod replay;
