//! Unit tests of the device's internals.

use super::{Device, DeviceConfig, LockFamilyMutex, MAX_STREAMS};
use crate::null::Null;
use crate::stream::StreamId;

/// Issue 14 item 6: the tables indexed by stream follow the streams in use,
/// not the streams the device could have (the sync table is square).
#[test]
fn tables_grow_with_the_streams_in_use() {
    let d = Device::new(Null, DeviceConfig::with_streams(MAX_STREAMS)).unwrap();
    let tracked = |d: &Device<Null>| LockFamilyMutex::lock(&d.shared.state).sync.streams();
    assert_eq!(tracked(&d), 0, "nothing up front");
    let a = d.alloc(StreamId(0), 64).unwrap();
    assert_eq!(tracked(&d), 1);
    let b = d.alloc(StreamId(5), 64).unwrap();
    assert_eq!(tracked(&d), 6);
    {
        let inner = LockFamilyMutex::lock(&d.shared.state);
        assert_eq!(inner.plan.waits().count(), 0);
        assert_eq!(inner.buffers.get(a.id()).unwrap().last_use.len(), 6);
        assert_eq!(inner.buffers.get(b.id()).unwrap().last_use.len(), 6);
    }
    drop((a, b));
    d.sync_all().unwrap();
}
