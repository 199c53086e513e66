//! The desktop channel: `org.freedesktop.Notifications.Notify` on the D-Bus
//! session bus (zbus on tokio), used only where `DBUS_SESSION_BUS_ADDRESS`
//! is set when the notify process starts; elsewhere the channel is shown as
//! unavailable with that reason and nothing is queued for it. The summary
//! and body are the notification's own text: no proof, no action buttons
//! (a click decides nothing).

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::Duration;

use zbus::zvariant::Value;

use super::message::Notification;

/// Why a configured desktop channel is not used.
pub(crate) const NO_SESSION_BUS: &str =
    "no session bus: DBUS_SESSION_BUS_ADDRESS was not set when the notify process started";

/// How long one notification may take on the bus.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The session bus, as the notify process's environment names it.
#[derive(Debug)]
pub(crate) struct DesktopChannel;

impl DesktopChannel {
    /// A channel when `address` (the value of `DBUS_SESSION_BUS_ADDRESS`)
    /// is set and not empty; otherwise why not.
    pub(crate) fn for_address(address: Option<OsString>) -> Result<DesktopChannel, &'static str> {
        match address {
            Some(value) if !value.is_empty() => Ok(DesktopChannel),
            _ => Err(NO_SESSION_BUS),
        }
    }

    /// One attempt: connect to the session bus and call `Notify`.
    pub(crate) async fn send(&self, notification: &Notification) -> Result<(), String> {
        let summary = notification.summary();
        let body = notification.text();
        let call = async {
            let connection = zbus::connection::Builder::session()?
                .method_timeout(TIMEOUT)
                .build()
                .await?;
            let hints: HashMap<&str, Value<'_>> = HashMap::new();
            let actions: Vec<&str> = Vec::new();
            let reply = connection
                .call_method(
                    Some("org.freedesktop.Notifications"),
                    "/org/freedesktop/Notifications",
                    Some("org.freedesktop.Notifications"),
                    "Notify",
                    &(
                        "countersign",
                        0u32,
                        "",
                        summary.as_str(),
                        body.as_str(),
                        actions,
                        hints,
                        -1i32,
                    ),
                )
                .await?;
            let _id: u32 = reply.body().deserialize()?;
            Ok::<_, zbus::Error>(())
        };
        match tokio::time::timeout(TIMEOUT, call).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("D-Bus: {e}")),
            Err(_) => Err("D-Bus: no answer within 10 s".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_channel_is_used_only_with_a_session_bus_address() {
        assert!(DesktopChannel::for_address(Some("unix:path=/run/bus".into())).is_ok());
        assert_eq!(
            DesktopChannel::for_address(Some(OsString::new())).unwrap_err(),
            NO_SESSION_BUS
        );
        assert_eq!(
            DesktopChannel::for_address(None).unwrap_err(),
            NO_SESSION_BUS
        );
    }
}
