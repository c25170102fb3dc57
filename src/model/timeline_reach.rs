//! The timeline reaching back: serve's record of a lane's resource, counted
//! per bucket (`crate::api::history_marks`), drawn in that lane for the
//! time before the page's own history of it begins — so the two never
//! count a delta twice — and the spans the recorder did not watch shaded
//! with their reason. Only lanes that are resources reach back (a lane of
//! a namespace or a type mixes resources serve counted apart).

use crate::api::history_marks::{RecordedMarks, MARK_TYPES};
use crate::informer::Millis;

use super::timeline::{type_index, LaneMode, TimelineData, COLUMNS};

impl TimelineData {
    /// Adds `marks` to lane `lane` for the buckets that end at or before
    /// `before` (the page's own first delta of the resource; a bucket
    /// reaching past it is left out, as the page's own history counts
    /// from there) and within the range shown, and the record's gaps.
    pub fn add_recorded(&mut self, lane: usize, marks: &RecordedMarks, before: Millis) {
        if self.mode != LaneMode::Resource {
            return;
        }
        let (start, end) = (self.start, self.end.max(self.start + 1));
        let span = (end - start) as f64;
        let Some(lane) = self.lanes.get_mut(lane) else {
            return;
        };
        let slots = MARK_TYPES.map(type_index);
        for (index, counts) in &marks.counts {
            let (from, to) = (marks.bucket_start(*index), marks.bucket_start(index + 1));
            if to > before || to <= start || from >= end {
                continue;
            }
            let at = from.max(start);
            let column = (((at - start) as f64 / span * COLUMNS as f64) as usize).min(COLUMNS - 1);
            for (slot, count) in slots.iter().zip(counts) {
                lane.columns[column][*slot] += count;
                lane.count += u64::from(*count);
                lane.recorded += u64::from(*count);
                self.in_view += u64::from(*count);
            }
        }
        for gap in &marks.gaps {
            let (from, to) = (gap.from_ms.max(0) as Millis, gap.to_ms.max(0) as Millis);
            if to > start && from < end && from < before {
                lane.recorded_gaps
                    .push((from, to.min(before), gap.reason.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::object_record::RecordGap;
    use crate::informer::DeltaType;
    use crate::model::timeline::Lane;

    fn data(start: Millis, end: Millis, mode: LaneMode) -> TimelineData {
        let mut lane = Lane::new("pods".into());
        lane.add(599, type_index(DeltaType::Replaced));
        TimelineData {
            start,
            end,
            mode,
            lanes: vec![lane],
            in_view: 1,
            ..TimelineData::default()
        }
    }

    /// 10 buckets over 0..10 s: 12 Added in the second, 3 Updated in the
    /// sixth, 5 Sync in the last; a gap from 3 s to 3.5 s.
    fn marks() -> RecordedMarks {
        let mut added = [0; 5];
        added[0] = 12;
        let mut updated = [0; 5];
        updated[1] = 3;
        let mut sync = [0; 5];
        sync[4] = 5;
        RecordedMarks {
            since: 0,
            until: 10_000,
            buckets: 10,
            counts: vec![(1, added), (5, updated), (9, sync)],
            gaps: vec![RecordGap {
                from_ms: 3_000,
                to_ms: 3_500,
                reason: "unreachable".into(),
            }],
        }
    }

    #[test]
    fn recorded_buckets_before_the_page_are_drawn_in_their_lane() {
        let mut data = data(0, 12_000, LaneMode::Resource);
        // The page's own history starts at 9.5 s: the last bucket (9..10 s)
        // reaches past it and is the page's to count.
        data.add_recorded(0, &marks(), 9_500);
        let lane = &data.lanes[0];
        assert_eq!(lane.recorded, 15);
        assert_eq!(lane.count, 16);
        assert_eq!(data.in_view, 16);
        assert_eq!(
            lane.columns[50][type_index(DeltaType::Added)],
            12,
            "1 s of 12 s in 600 columns"
        );
        assert_eq!(lane.columns[250][type_index(DeltaType::Updated)], 3);
        assert_eq!(lane.columns[450][type_index(DeltaType::Sync)], 0);
        assert_eq!(
            lane.recorded_gaps,
            vec![(3_000, 3_500, "unreachable".to_string())]
        );
    }

    #[test]
    fn only_what_is_in_view_and_only_resource_lanes() {
        let mut data = data(4_000, 12_000, LaneMode::Resource);
        data.add_recorded(0, &marks(), 12_000);
        assert_eq!(data.lanes[0].recorded, 8, "the 5th and 9th buckets");
        assert!(data.lanes[0].recorded_gaps.is_empty());
        let mut data = data_by_type();
        data.add_recorded(0, &marks(), 12_000);
        assert_eq!(data.lanes[0].recorded, 0);
        let mut data = self::data(0, 12_000, LaneMode::Resource);
        data.add_recorded(3, &marks(), 12_000);
        assert_eq!(data.lanes[0].recorded, 0, "no such lane");
    }

    fn data_by_type() -> TimelineData {
        data(0, 12_000, LaneMode::Type)
    }
}
