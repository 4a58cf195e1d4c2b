//! The guest heap: an allocator that enforces `memoryBytes` itself and remembers that it had
//! to refuse, so the driver can report the memory limit even when QuickJS could not allocate
//! an error object to say so (it then throws `null`).

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::allocator::{Allocator, RustAllocator};

/// What the driver reads and adjusts while the guest runs.
#[derive(Debug)]
pub(crate) struct Heap {
    limit: Cell<usize>,
    used: Cell<usize>,
    exhausted: Cell<bool>,
}

impl Heap {
    pub(crate) fn new(limit: usize) -> Rc<Heap> {
        Rc::new(Heap { limit: Cell::new(limit), used: Cell::new(0), exhausted: Cell::new(false) })
    }

    /// Whether an allocation was ever refused for want of room.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    /// Sets the ceiling to `limit` bytes (an attempt taking a guest made ahead of it).
    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.set(limit);
    }

    /// Raises the ceiling by `extra` bytes (room to read a result or an error).
    pub(crate) fn grant(&self, extra: usize) {
        self.limit.set(self.limit.get().saturating_add(extra));
    }

    /// Books `bytes` if they fit under the limit.
    fn admit(&self, bytes: Option<usize>) -> bool {
        match bytes.and_then(|b| self.used.get().checked_add(b)) {
            Some(total) if total <= self.limit.get() => {
                self.used.set(total);
                true
            }
            _ => {
                self.exhausted.set(true);
                false
            }
        }
    }

    fn release(&self, bytes: usize) {
        self.used.set(self.used.get().saturating_sub(bytes));
    }
}

/// What one block costs: its rounded size plus the allocator's header.
fn cost(size: usize) -> Option<usize> {
    size.checked_next_multiple_of(8)?.checked_add(8)
}

/// Rust's global allocator (through rquickjs's `RustAllocator`) with the guest's ceiling.
pub(crate) struct GuestAllocator {
    inner: RustAllocator,
    heap: Rc<Heap>,
}

impl GuestAllocator {
    pub(crate) fn new(heap: Rc<Heap>) -> GuestAllocator {
        GuestAllocator { inner: RustAllocator, heap }
    }
}

// SAFETY: every block is allocated, resized, measured and freed by the wrapped
// `RustAllocator`, which upholds the trait's contract; this wrapper only books sizes and, when
// the ceiling would be crossed, returns a null pointer, which the contract allows (QuickJS
// treats it as out of memory and leaves the old block of a failed `realloc` untouched). The
// pointers QuickJS hands back to `dealloc`, `realloc` and `usable_size` came from this
// allocator, hence from `inner`.
#[allow(unsafe_code)]
unsafe impl Allocator for GuestAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let bytes = cost(size);
        if !self.heap.admit(bytes) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.alloc(size);
        if ptr.is_null() {
            self.heap.release(bytes.unwrap_or(0));
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.heap.exhausted.set(true);
            return std::ptr::null_mut();
        };
        let bytes = cost(total);
        if !self.heap.admit(bytes) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.calloc(count, size);
        if ptr.is_null() {
            self.heap.release(bytes.unwrap_or(0));
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: `ptr` came from this allocator (see above).
        let size = unsafe { RustAllocator::usable_size(ptr) };
        self.heap.release(cost(size).unwrap_or(0));
        // SAFETY: as above.
        unsafe { self.inner.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator (see above).
        let old = cost(unsafe { RustAllocator::usable_size(ptr) }).unwrap_or(0);
        let Some(new) = cost(new_size) else {
            self.heap.exhausted.set(true);
            return std::ptr::null_mut();
        };
        if new > old && !self.heap.admit(Some(new - old)) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let moved = unsafe { self.inner.realloc(ptr, new_size) };
        if moved.is_null() {
            if new > old {
                self.heap.release(new - old);
            }
        } else if new < old {
            self.heap.release(old - new);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: `ptr` came from this allocator (see above).
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_refuses_past_its_limit_and_remembers() {
        let heap = Heap::new(100);
        assert!(heap.admit(Some(60)));
        assert!(!heap.exhausted());
        assert!(!heap.admit(Some(60)));
        assert!(heap.exhausted());
        heap.release(60);
        heap.grant(50);
        assert!(heap.admit(Some(120)));
        assert!(!heap.admit(None));
    }
}
