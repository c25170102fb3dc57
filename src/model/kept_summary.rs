//! What the kept resources list and the settings show about each kept
//! informer (plain data the informers service fills in).

/// One kept resource's chip.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptItem {
    pub id: u64,
    pub label: String,
    /// The view's address (`#/…`).
    pub href: String,
    /// listing / watching / backoff / error, or paused (waiting for a
    /// connection: no channel, and the browser's limit reached).
    pub state: String,
    /// Deltas its history holds.
    pub held: usize,
    /// The table shows it.
    pub shown: bool,
}

/// What one kept resource's history holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Usage {
    pub label: String,
    pub held: usize,
    pub bytes: usize,
    pub recorded: u64,
    pub dropped: u64,
}
