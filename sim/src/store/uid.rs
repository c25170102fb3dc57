//! The sim's uids: the seeded hash (of a number, of strings) and the deterministic, UUID-shaped uids
//! it makes for objects (the same seed gives the same cluster, uid for
//! uid), and the one uid that is random: the cluster's identity, the
//! `kube-system` Namespace's uid, new for every sim (a recorder tells two
//! clusters apart by it, so two sims of one seed must not look alike).

use rand::RngCore;

/// A deterministic, UUID-shaped uid.
pub(super) fn uid(seed: u64, n: u64) -> String {
    let a = splitmix(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let b = splitmix(a ^ n);
    uuid_shaped(a, b)
}

/// A random version-4 UUID from the OS-seeded thread generator: the
/// cluster's identity (see the module docs).
pub(crate) fn random_uid() -> String {
    let mut rng = rand::thread_rng();
    uuid_shaped(rng.next_u64(), rng.next_u64())
}

/// `xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx` from 122 of the bits of `a` and `b`.
fn uuid_shaped(a: u64, b: u64) -> String {
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

/// The seeded hash of a sequence of strings (a pod's log run, a
/// container's metrics): each part's bytes folded in with [`splitmix`].
pub fn hash_parts(seed: u64, parts: &[&str]) -> u64 {
    parts.iter().fold(splitmix(seed), |h, part| {
        part.bytes()
            .fold(splitmix(h ^ 0xff), |h, b| splitmix(h ^ u64::from(b)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_uuid_v4(s: &str) -> bool {
        let parts: Vec<&str> = s.split('-').collect();
        parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
            && parts
                .iter()
                .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
            && parts[2].starts_with('4')
            && parts[3].starts_with('8')
    }

    #[test]
    fn seeded_uids_repeat_and_random_ones_do_not() {
        assert_eq!(uid(7, 3), uid(7, 3));
        assert_ne!(uid(7, 3), uid(7, 4));
        assert!(is_uuid_v4(&uid(7, 3)));
        let (a, b) = (random_uid(), random_uid());
        assert!(is_uuid_v4(&a), "{a}");
        assert_ne!(a, b);
    }
}
