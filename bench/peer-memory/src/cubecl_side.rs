//! cubecl-server's `MemoryManagement`, one per stream, over a storage that
//! counts bytes into the same accounting as streamcore's side.

use std::collections::HashMap;

use cubecl_environment::backtrace::BackTrace;
use cubecl_environment::sync::Arc;
use cubecl_ir::MemoryDeviceProperties;
use cubecl_server::logging::ServerLogger;
use cubecl_server::memory_management::relocation::{CopyQueue, RelocationNeed, StorageCopy};
use cubecl_server::memory_management::{
    Cleanup, ErrorGraph, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement,
    MemoryManagementOptions, PageUpdate,
};
use cubecl_server::server::{IoError, ServerError};
use cubecl_server::storage::{ComputeStorage, StorageHandle, StorageId, StorageUtilization};
use streamcore_mock::replay::{Accounting, ReplayTarget};

/// A `ComputeStorage` holding no memory: ids and byte counts only.
pub struct CountingCubeStorage {
    accounting: Accounting,
    alignment: usize,
    live: HashMap<StorageId, u64>,
    pending: u64,
    held: u64,
}

impl ComputeStorage for CountingCubeStorage {
    type Resource = ();

    fn alignment(&self) -> usize {
        self.alignment
    }

    fn get(&mut self, handle: &StorageHandle) -> Result<(), IoError> {
        if self.live.contains_key(&handle.id) {
            Ok(())
        } else {
            Err(IoError::StorageHandleNotFound {
                reason: format!("{} in the counting storage", handle.id).into(),
                backtrace: BackTrace::capture(),
            })
        }
    }

    fn alloc(&mut self, size: u64) -> Result<StorageHandle, IoError> {
        if !self.accounting.try_alloc(size) {
            return Err(IoError::OutOfMemory {
                size,
                backtrace: BackTrace::capture(),
            });
        }
        let id = StorageId::new();
        self.live.insert(id, size);
        self.held += size;
        Ok(StorageHandle::new(
            id,
            StorageUtilization { offset: 0, size },
        ))
    }

    fn dealloc(&mut self, id: StorageId) {
        if let Some(size) = self.live.remove(&id) {
            self.pending += size;
            self.accounting.dealloc(size);
        }
    }

    fn flush(&mut self) {
        self.accounting.flush(self.pending);
        self.held -= self.pending;
        self.pending = 0;
    }

    fn bytes_allocated(&self) -> u64 {
        self.held
    }
}

/// Relocation copies: the counting storage holds no bytes, so there is
/// nothing to copy or wait for.
struct NoCopies;

impl CopyQueue<CountingCubeStorage> for NoCopies {
    fn wait_device(&mut self) -> Result<(), ServerError> {
        Ok(())
    }

    fn copy(&mut self, _: &mut CountingCubeStorage, _: &StorageCopy) -> Result<(), IoError> {
        Ok(())
    }

    fn wait_copies(&mut self) -> Result<(), ServerError> {
        Ok(())
    }
}

/// One `MemoryManagement` per stream, driven the way cubecl-server's command
/// layer drives it: before each reserve, relocate when the memory asks for it
/// (and the device is under pressure); on a failed reserve, clean up and
/// retry once.
pub struct CubeclTarget {
    accounting: Accounting,
    config: MemoryConfiguration,
    props: MemoryDeviceProperties,
    alignment: usize,
    logger: Arc<ServerLogger>,
    failures: ErrorGraph,
    managers: Vec<MemoryManagement<CountingCubeStorage>>,
}

impl CubeclTarget {
    pub fn new(config: MemoryConfiguration, max_page: u64, alignment: u64, total: u64) -> Self {
        Self {
            accounting: Accounting::new(),
            config,
            props: MemoryDeviceProperties::new(max_page, alignment).with_max_memory(total),
            alignment: alignment as usize,
            logger: Arc::new(ServerLogger::default()),
            failures: ErrorGraph::default(),
            managers: Vec::new(),
        }
    }

    fn manager(&mut self, stream: u32) -> &mut MemoryManagement<CountingCubeStorage> {
        while self.managers.len() <= stream as usize {
            let storage = CountingCubeStorage {
                accounting: self.accounting.clone(),
                alignment: self.alignment,
                live: HashMap::new(),
                pending: 0,
                held: 0,
            };
            let name = format!("stream-{}", self.managers.len());
            self.managers.push(MemoryManagement::from_configuration(
                storage,
                &self.props,
                self.config.clone(),
                self.logger.clone(),
                MemoryManagementOptions::new(name),
            ));
        }
        &mut self.managers[stream as usize]
    }
}

impl ReplayTarget for CubeclTarget {
    type Handle = ManagedMemoryHandle;
    type Error = IoError;

    fn alloc(&mut self, stream: u32, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        let mut failures = std::mem::take(&mut self.failures);
        self.manager(stream);
        let need = self.managers[stream as usize].relocation_need();
        if need != RelocationNeed::Nothing {
            let allocated: u64 = self.managers.iter().map(|m| m.bytes_allocated()).sum();
            if let Some(reason) = need.reason(|| allocated) {
                self.managers[stream as usize].relocate(&mut NoCopies, reason, &mut failures);
            }
        }
        let m = &mut self.managers[stream as usize];
        let r = match m.reserve(size, PageUpdate::Allow, &mut failures) {
            Ok(h) => Ok(h),
            Err(_) => {
                m.cleanup(Cleanup::Explicit, &mut failures);
                m.reserve(size, PageUpdate::Allow, &mut failures)
            }
        };
        self.failures = failures;
        r
    }

    /// Dropping the handle frees the slice (the pools see it on their next pass).
    fn free(&mut self, _stream: u32, handle: ManagedMemoryHandle) -> Result<(), IoError> {
        drop(handle);
        Ok(())
    }

    fn accounting(&self) -> &Accounting {
        &self.accounting
    }
}
