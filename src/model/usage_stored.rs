//! An object's usage series as the browser's database keeps it, so that a
//! chart survives a reload also without serve's recorder (`trunk serve` in
//! front of `kubectl proxy`): the record's key ([`stored_key`]), its bytes
//! ([`encode`]/[`decode`]) and which objects' series are kept
//! ([`StoredIndex`]: the [`MAX_STORED_SUBJECTS`] most recently measured).
//!
//! The bytes are a small fixed layout of our own (little-endian integers,
//! a version byte first) rather than JSON through serde: a day of a pod's
//! samples is about 5,760 × 60 bytes, written once per metrics window, and
//! a serde derive would add to the page's download for no gain. Pure and
//! tested natively; the reads and writes are `crate::transport::stored_usage`'s.

use crate::api::usage_history::{ContainerUsage, SampleSource, UsageSample};
use crate::informer::Millis;
use crate::model::usage_series::UsageSubject;

/// The layout's version (the first byte).
const VERSION: u8 = 1;
/// How many objects' series the browser keeps at most.
pub const MAX_STORED_SUBJECTS: usize = 64;
/// The database key of the index record (no object's key is empty).
pub const INDEX_KEY: &str = "";

/// Why stored bytes could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoredUsageError {
    #[error("stored usage of layout {0}, which this page does not read")]
    Version(u8),
    #[error("stored usage ends in the middle of a sample")]
    Truncated,
}

/// The database key of `subject`'s series.
pub fn stored_key(subject: &UsageSubject) -> String {
    match subject {
        UsageSubject::Pod { namespace, name } => format!("pods/{namespace}/{name}"),
        UsageSubject::Node { name } => format!("nodes/{name}"),
        UsageSubject::Workload {
            namespace,
            kind,
            name,
            ..
        } => format!("{kind}/{namespace}/{name}"),
    }
}

/// `samples` (oldest first) as stored bytes.
pub fn encode<'a>(samples: impl ExactSizeIterator<Item = &'a UsageSample>) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + samples.len() * 48);
    out.push(VERSION);
    out.extend_from_slice(
        &u32::try_from(samples.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for sample in samples {
        for n in [
            sample.at,
            sample.window,
            sample.cpu_nanocores,
            sample.memory_bytes,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&sample.pods.unwrap_or(u32::MAX).to_le_bytes());
        out.push(match sample.source {
            SampleSource::Page => 0,
            SampleSource::Recorder => 1,
        });
        let containers = u16::try_from(sample.containers.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&containers.to_le_bytes());
        for container in sample.containers.iter().take(usize::from(containers)) {
            let name = &container.name.as_bytes()[..container.name.len().min(255)];
            out.push(name.len() as u8);
            out.extend_from_slice(name);
            out.extend_from_slice(&container.cpu_nanocores.to_le_bytes());
            out.extend_from_slice(&container.memory_bytes.to_le_bytes());
        }
    }
    out
}

/// Reads what [`encode`] wrote, oldest first.
pub fn decode(bytes: &[u8]) -> Result<Vec<UsageSample>, StoredUsageError> {
    let mut reader = Reader(bytes);
    match reader.take(1)?[0] {
        VERSION => {}
        other => return Err(StoredUsageError::Version(other)),
    }
    let count = reader.u32()? as usize;
    // never trust a count for an allocation: a sample is at least 39 bytes
    let mut samples = Vec::with_capacity(count.min(bytes.len() / 39));
    for _ in 0..count {
        let (at, window, cpu, memory) =
            (reader.u64()?, reader.u64()?, reader.u64()?, reader.u64()?);
        let pods = Some(reader.u32()?).filter(|p| *p != u32::MAX);
        let source = match reader.take(1)?[0] {
            1 => SampleSource::Recorder,
            _ => SampleSource::Page,
        };
        let count = u16::from_le_bytes([reader.take(1)?[0], reader.take(1)?[0]]);
        let mut containers = Vec::new();
        for _ in 0..count {
            let length = usize::from(reader.take(1)?[0]);
            let name = String::from_utf8_lossy(reader.take(length)?).into_owned();
            containers.push(ContainerUsage {
                name,
                cpu_nanocores: reader.u64()?,
                memory_bytes: reader.u64()?,
            });
        }
        samples.push(UsageSample {
            at,
            window,
            cpu_nanocores: cpu,
            memory_bytes: memory,
            pods,
            containers,
            source,
        });
    }
    Ok(samples)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StoredUsageError> {
        if self.0.len() < n {
            return Err(StoredUsageError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, StoredUsageError> {
        let mut word = [0; 4];
        word.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(word))
    }

    fn u64(&mut self) -> Result<u64, StoredUsageError> {
        let mut word = [0; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }
}

/// Which objects' series are stored, and when each was last written: the
/// index record's text, a line `MS KEY` per object, newest last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredIndex {
    entries: Vec<(Millis, String)>,
}

impl StoredIndex {
    /// Reads the index record's text; lines it cannot read are left out.
    pub fn parse(text: &str) -> StoredIndex {
        let entries = text
            .lines()
            .filter_map(|line| {
                let (at, key) = line.split_once(' ')?;
                Some((at.parse().ok()?, key.to_string()))
            })
            .filter(|(_, key): &(Millis, String)| !key.is_empty())
            .collect();
        StoredIndex { entries }
    }

    pub fn text(&self) -> String {
        self.entries
            .iter()
            .map(|(at, key)| format!("{at} {key}\n"))
            .collect()
    }

    /// `key` was written at `at`; returns the keys to delete to stay
    /// within [`MAX_STORED_SUBJECTS`] (the least recently written).
    pub fn written(&mut self, key: &str, at: Millis) -> Vec<String> {
        self.entries.retain(|(_, k)| k != key);
        self.entries.push((at, key.to_string()));
        let over = self.entries.len().saturating_sub(MAX_STORED_SUBJECTS);
        self.entries.drain(..over).map(|(_, key)| key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: Millis, containers: &[(&str, u64)], source: SampleSource) -> UsageSample {
        UsageSample {
            at,
            window: 15_000,
            cpu_nanocores: at * 3,
            memory_bytes: u64::MAX - at,
            pods: (containers.is_empty()).then_some(4),
            containers: containers
                .iter()
                .map(|(name, memory)| ContainerUsage {
                    name: name.to_string(),
                    cpu_nanocores: 7,
                    memory_bytes: *memory,
                })
                .collect(),
            source,
        }
    }

    #[test]
    fn a_series_reads_back_as_it_was_written() {
        let samples = vec![
            sample(1_000, &[("app", 10), ("sidecar-ü", 20)], SampleSource::Page),
            sample(16_000, &[], SampleSource::Recorder),
            sample(31_000, &[("app", 30)], SampleSource::Page),
        ];
        let bytes = encode(samples.iter());
        assert_eq!(decode(&bytes), Ok(samples));
        assert_eq!(decode(&encode([].iter())), Ok(Vec::new()));
    }

    #[test]
    fn damaged_bytes_are_refused_not_misread() {
        let bytes = encode([sample(1_000, &[("app", 10)], SampleSource::Page)].iter());
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut other = bytes.clone();
        other[0] = 9;
        assert_eq!(decode(&other), Err(StoredUsageError::Version(9)));
        // a count far beyond the bytes allocates nothing large and fails
        let mut lying = vec![VERSION];
        lying.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&lying), Err(StoredUsageError::Truncated));
    }

    #[test]
    fn the_index_keeps_the_most_recently_written_subjects() {
        let mut index = StoredIndex::default();
        for n in 0..MAX_STORED_SUBJECTS as Millis {
            assert!(index.written(&format!("pods/ns/p{n}"), n).is_empty());
        }
        // p0 written again: p1 is now the least recent
        assert!(index.written("pods/ns/p0", 100).is_empty());
        assert_eq!(index.written("nodes/n1", 101), ["pods/ns/p1"]);
        let again = StoredIndex::parse(&index.text());
        assert_eq!(again, index);
        assert_eq!(again.text().lines().count(), MAX_STORED_SUBJECTS);
        let damaged = StoredIndex::parse("12 pods/a/b\nnonsense\n x\n13 \n14 nodes/n");
        assert_eq!(damaged.text(), "12 pods/a/b\n14 nodes/n\n");
    }

    #[test]
    fn each_subject_has_its_own_key() {
        let keys = [
            UsageSubject::Pod {
                namespace: "shop".into(),
                name: "web".into(),
            },
            UsageSubject::Node { name: "web".into() },
            UsageSubject::Workload {
                namespace: "shop".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                selector: "app=web".into(),
            },
        ]
        .map(|s| stored_key(&s));
        assert_eq!(keys, ["pods/shop/web", "nodes/web", "Deployment/shop/web"]);
        assert!(keys.iter().all(|k| k != INDEX_KEY));
    }
}
