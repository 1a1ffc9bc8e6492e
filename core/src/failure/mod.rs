//! The error-taint graph (filled by the taint work).
