//! Several hosts on one machine, for the tests and the load tool: each
//! host is a Linux network namespace (`ip netns`) with one veth pair
//! plugged into a bridge of its own in the root namespace, and a TCP proxy
//! ([`DelayProxy`]) adds a fixed delay to what crosses it (`tc netem` is not
//! available on every machine this runs on).
//!
//! Needs root and `ip` (iproute2); [`unavailable`] says why not, for a test
//! to print `SKIPPED`. Everything created (namespaces, veth pairs, the
//! bridge, processes left inside the namespaces) is removed when the
//! [`Topology`] is dropped, also while a test panics; names carry the
//! process id, so parallel runs never collide, and leftovers of a process
//! that no longer exists (killed before it could clean up) are removed by
//! the next [`Topology::create`].
//!
//! Not for production: it runs `ip` as root and kills what runs in its
//! namespaces.
#![forbid(unsafe_code)]

mod proxy;
mod topology;

pub use proxy::DelayProxy;
pub use topology::{Topology, unavailable};
