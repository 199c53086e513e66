//! Premises (shared by both backends): the read of one state key that the
//! signer makes at proposal and decision, and the premise established once
//! more for a consumption, which refuses a proof whose premise moved: a
//! state premise read again inside the consume transaction, a command
//! premise compared there with what its program printed just before it.
//!
//! A state premise is the key's value and version (the id of the event
//! that last wrote it), so a value written again is still a change. This
//! module must not write anything.

use countersign_verifier::{Premise, StatePremise};
use sqlx::Row as _;

use super::{Conn, Store};
use crate::error::{LedgerError, LedgerRefusal};
use crate::premise_command::CommandNow;

/// `SELECT value, version` of one state key.
const READ: &str =
    "SELECT value, version FROM state WHERE principal = $1 AND namespace = $2 AND key = $3";

/// The premise found in `row` (columns `value`, `version`), or an absent
/// one, for `namespace` and `key`.
fn premise_of(
    row: Option<super::DbRow>,
    namespace: &str,
    key: &str,
) -> Result<StatePremise, LedgerError> {
    let (value, version) = match row {
        None => (None, 0),
        Some(row) => {
            let text: String = row.try_get("value")?;
            let value = serde_json::from_str(&text)
                .map_err(|e| LedgerError::Corrupt(format!("state {key:?}: {e}")))?;
            let version: i64 = row.try_get("version")?;
            let version = u64::try_from(version)
                .map_err(|_| LedgerError::Corrupt(format!("state {key:?}: negative version")))?;
            (Some(value), version)
        }
    };
    Ok(StatePremise {
        namespace: namespace.to_owned(),
        key: key.to_owned(),
        value,
        version,
    })
}

/// Step 6 of a consumption, on `conn` inside the write transaction after
/// the locks: the premise the proof carries must still hold, else
/// `PremiseChanged` and the caller rolls back.
///
/// A state premise is read here: every state write holds the chain head,
/// so nothing changes the key before this transaction ends, and the lock
/// is what makes "still holds" true at commit.
///
/// A command premise is `command_now`, what its program printed just
/// before the transaction (`Ledger::command_premise_now`); if it printed
/// nothing usable, `PremiseUnavailable`. It is not run here, under the
/// locks: the program reads the world outside the ledger, which no ledger
/// lock holds still, so the lock would add no guarantee (the world can
/// move between the program's exit and the commit either way, by the same
/// few milliseconds as between a run inside and the commit) and would
/// stall every writer sharing this transaction for up to
/// `PREMISE_TIMEOUT`. The guarantee is the same as before: the output,
/// observed after the proof was presented, equals what the person saw.
pub(super) async fn check_holds(
    conn: &mut Conn,
    principal: &str,
    premise: &Premise,
    command_now: Option<&CommandNow>,
) -> Result<(), LedgerError> {
    let now = match premise {
        Premise::State(shown) => {
            let row = sqlx::query(READ)
                .bind(principal)
                .bind(&shown.namespace)
                .bind(&shown.key)
                .fetch_optional(&mut *conn)
                .await?;
            Premise::State(premise_of(row, &shown.namespace, &shown.key)?)
        }
        Premise::Command(_) => match command_now {
            Some(CommandNow::Printed(now)) => Premise::Command(now.clone()),
            Some(CommandNow::Unavailable) | None => {
                return Err(LedgerRefusal::PremiseUnavailable.into());
            }
        },
    };
    if now != *premise {
        return Err(LedgerRefusal::PremiseChanged.into());
    }
    Ok(())
}

impl Store {
    /// The premise `principal`'s state holds now for `namespace`/`key`.
    pub(crate) async fn read_premise(
        &self,
        principal: &str,
        namespace: &str,
        key: &str,
    ) -> Result<StatePremise, LedgerError> {
        let row = sqlx::query(READ)
            .bind(principal)
            .bind(namespace)
            .bind(key)
            .fetch_optional(&self.reader)
            .await?;
        premise_of(row, namespace, key)
    }
}
