//! The HIP storages declare their driver costs (`StorageTerms::costs`, which
//! the churn budget spends) and the mock's driver model charges its own
//! table of the same driver (`replay::H200`, which predicts the GPU's
//! replays). Both come from the same measurements on the H200; this holds
//! them equal, so a refit of one without the other fails here.

use streamcore::platform::CallCost;
use streamcore_hip::{
    DEVICE_ALIGNMENT, MALLOC_COSTS, MALLOC_GRANULARITY, MALLOC_PACK_LIMIT, VMM_COSTS,
};
use streamcore_mock::replay::H200;

/// Adds two call costs (one call made of two driver calls).
fn both(a: CallCost, b: CallCost) -> CallCost {
    CallCost::new(a.fixed_ns + b.fixed_ns, a.per_mib_ns + b.per_mib_ns)
}

#[test]
fn the_virtual_memory_storage_declares_what_the_model_charges() {
    assert_eq!(VMM_COSTS.reserve, H200.reserve);
    assert_eq!(VMM_COSTS.commit, H200.commit);
    assert_eq!(VMM_COSTS.decommit, H200.decommit);
    // A plain page is one range reserved and one chunk committed, given
    // back by one decommit.
    assert_eq!(VMM_COSTS.alloc, both(H200.reserve, H200.commit));
    assert_eq!(VMM_COSTS.release, H200.decommit);
}

#[test]
fn the_malloc_storage_declares_what_the_model_charges() {
    assert_eq!(MALLOC_COSTS.alloc, H200.malloc);
    assert_eq!(MALLOC_COSTS.release, H200.free);
    assert_eq!(MALLOC_GRANULARITY, H200.granularity);
    assert_eq!(MALLOC_PACK_LIMIT, H200.pack_limit);
    assert_eq!(DEVICE_ALIGNMENT, H200.alignment);
}
