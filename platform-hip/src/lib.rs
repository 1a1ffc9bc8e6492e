//! The streamcore platform over real HIP (filled by the HIP work).
