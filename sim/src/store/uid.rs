//! The sim's seeded hash and the deterministic, UUID-shaped uids it makes:
//! the same seed gives the same cluster, uid for uid.

/// A deterministic, UUID-shaped uid.
pub(super) fn uid(seed: u64, n: u64) -> String {
    let a = splitmix(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let b = splitmix(a ^ n);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        (a as u16) & 0xfff,
        ((b >> 48) as u16) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

/// SplitMix64's finaliser: the sim's seeded hash (uids, log lines).
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
