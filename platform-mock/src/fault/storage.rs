//! Storages of a [`FaultInjector`](super::FaultInjector): the inner storage
//! behind the same fault plan. Resizable pages fail where the storage's
//! other calls do: `reserve` and `commit` at the allocation site
//! ([`Site::DeviceAlloc`] for a device storage), `decommit` where `flush`
//! does ([`Site::Flush`]).

use std::sync::{Arc, Mutex};

use streamcore::platform::{HostStorage, PageId, Storage, StorageTerms};

use super::FaultState;
use super::error::FaultError;
use super::plan::Site;

/// A storage whose calls go through the injector's plan.
#[derive(Debug)]
pub struct FaultStorage<S> {
    pub(crate) inner: S,
    pub(crate) state: Arc<Mutex<FaultState>>,
    pub(crate) alloc_site: Site,
}

impl<S> FaultStorage<S> {
    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn check<E>(&self, site: Site) -> Result<(), FaultError<E>> {
        super::check(&self.state, site, None)
    }
}

impl<S: Storage> Storage for FaultStorage<S> {
    type Error = FaultError<S::Error>;

    fn alignment(&self) -> u64 {
        self.inner.alignment()
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, Self::Error> {
        self.check(self.alloc_site.clone())?;
        self.inner.alloc(size).map_err(FaultError::Platform)
    }

    /// Forwarded unless the device is lost (then nothing reaches it).
    fn dealloc(&mut self, page: PageId) {
        if !super::lost(&self.state) {
            self.inner.dealloc(page);
        }
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.check(Site::Flush)?;
        self.inner.flush().map_err(FaultError::Platform)
    }

    fn terms(&self) -> StorageTerms {
        self.inner.terms()
    }

    /// Checked at the storage's allocation site.
    fn reserve(&mut self, size: u64) -> Result<PageId, Self::Error> {
        self.check(self.alloc_site.clone())?;
        self.inner.reserve(size).map_err(FaultError::Platform)
    }

    /// Checked at the storage's allocation site.
    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Self::Error> {
        self.check(self.alloc_site.clone())?;
        self.inner
            .commit(page, offset, len)
            .map_err(FaultError::Platform)
    }

    /// Checked where releases are ([`Site::Flush`]).
    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Self::Error> {
        self.check(Site::Flush)?;
        self.inner
            .decommit(page, offset, len)
            .map_err(FaultError::Platform)
    }
}

impl<S: HostStorage> HostStorage for FaultStorage<S> {
    fn write(&mut self, page: PageId, offset: u64, data: &[u8]) -> Result<(), Self::Error> {
        self.check(Site::HostWrite)?;
        self.inner
            .write(page, offset, data)
            .map_err(FaultError::Platform)
    }

    fn read(&self, page: PageId, offset: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        self.check(Site::HostRead)?;
        self.inner
            .read(page, offset, out)
            .map_err(FaultError::Platform)
    }
}
