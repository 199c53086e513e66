//! Web Push for countersign (RFC 8030 delivery, RFC 8291 message
//! encryption, RFC 8292 VAPID), without the sending: the notify process
//! sends, over `countersign-outbound`.
//!
//! What this crate owns:
//! - the installation's VAPID key pair (`vapid`): made at `countersign
//!   init`, or by the notify process's first start with a `[notify.push]`
//!   channel in a home made before push existed; the private half is read
//!   only by the process that sends, the console reads only the public half;
//! - a browser's push subscription parsed strictly (`subscription`): the
//!   endpoint (https, or plain http to a loopback IP only), the P-256 key
//!   and the 16-byte auth secret, with a refusal that names what is wrong.
//!
//! Which devices are subscribed is the console's (its session stores),
//! read by the signer for the notify process (`PushDevices`).
//!
//! Must not: send anything, log a key or an auth secret, or accept a
//! subscription it would not send to.
#![forbid(unsafe_code)]

pub mod subscription;
pub mod vapid;

pub use subscription::{Subscription, SubscriptionRefusal};
pub use vapid::{VapidError, VapidKey};
