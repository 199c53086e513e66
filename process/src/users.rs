//! Local users by name: the uid a Unix socket's peer must have. Reads
//! `/etc/passwd` only (system users are local); it must not ask a name
//! service that another user could answer.

/// The uid of `name` in `/etc/passwd` (system users are local; a name
/// that is all digits is taken as a uid).
pub fn uid_of(name: &str) -> Result<u32, String> {
    if let Ok(uid) = name.parse::<u32>() {
        return Ok(uid);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    passwd
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let user = fields.next()?;
            let uid = fields.nth(1)?;
            (user == name).then(|| uid.parse::<u32>().ok()).flatten()
        })
        .next()
        .ok_or(format!("no user {name:?} in /etc/passwd"))
}
