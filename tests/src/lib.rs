//! The streamcore scenario suite, written once against the platform traits.
