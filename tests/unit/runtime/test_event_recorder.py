"""Event aggregation: repeats become a counted series; floods are rate limited."""

from __future__ import annotations

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.events import EventData, EventRecorder

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "head", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}  # fmt: skip


class RecordingSink:
    def __init__(self) -> None:
        self.created: list[EventData] = []
        self.updated: list[EventData] = []

    def create(self, event: EventData) -> None:
        self.created.append(event)

    def update_count(self, event: EventData) -> None:
        self.updated.append(event)


def test_first_occurrence_creates_an_event_naming_the_object() -> None:
    sink = RecordingSink()
    EventRecorder(sink, clock=FakeClock()).record(POD, "Normal", "CreatedPod", "made it")
    [event] = sink.created
    assert event.namespace == "ns" and event.reason == "CreatedPod" and event.count == 1
    assert event.regarding["uid"] == "u-1" and event.regarding["kind"] == "Pod"
    assert event.action == "CreatedPod"


def test_a_hot_loop_repeating_one_event_writes_one_create_and_rare_count_updates() -> None:
    clock = FakeClock()
    sink = RecordingSink()
    recorder = EventRecorder(sink, clock=clock)
    for _ in range(1000):  # 1000 repeats over 100 s
        recorder.record(POD, "Warning", "FailedCreatePod", "quota exceeded")
        clock.advance(0.1)
    assert len(sink.created) == 1
    assert 1 <= len(sink.updated) <= 4, "count updates at most every 30 s"
    recorder.flush()
    assert sink.updated[-1].count == 1000


def test_distinct_messages_for_one_object_are_capped_by_its_budget() -> None:
    clock = FakeClock()
    sink = RecordingSink()
    drops: list[int] = []
    recorder = EventRecorder(sink, clock=clock, on_dropped=lambda: drops.append(1))
    for index in range(100):  # distinct reasons: nothing to combine
        recorder.record(POD, "Warning", f"Failed{index}", f"attempt {index}")
    assert len(sink.created) == 25
    assert recorder.dropped == 75 == len(drops)
    other = {**POD, "metadata": {**POD["metadata"], "uid": "u-2", "name": "worker"}}
    recorder.record(other, "Normal", "Created", "x")
    assert len(sink.created) == 26, "another object has its own budget"
    clock.advance(300)
    recorder.record(POD, "Warning", "Failed", "after refill")
    assert len(sink.created) == 27


def test_a_repeat_after_the_series_window_starts_a_new_event() -> None:
    clock = FakeClock()
    sink = RecordingSink()
    recorder = EventRecorder(sink, clock=clock)
    recorder.record(POD, "Normal", "Scaled", "3 -> 4")
    clock.advance(361)
    recorder.record(POD, "Normal", "Scaled", "3 -> 4")
    assert len(sink.created) == 2
    assert sink.created[0].name != sink.created[1].name


def test_memory_is_bounded_by_max_tracked() -> None:
    sink = RecordingSink()
    recorder = EventRecorder(sink, clock=FakeClock(), max_tracked=10, burst=1000)
    for index in range(100):
        recorder.record(POD, "Normal", f"R{index}", f"m{index}")
    assert len(recorder._series) == 10
    assert len(recorder._similar) == 10


def test_the_tenth_distinct_note_of_a_reason_and_later_ones_are_combined() -> None:
    clock = FakeClock()
    sink = RecordingSink()
    recorder = EventRecorder(sink, clock=clock)
    for index in range(100):
        recorder.record(POD, "Normal", "CreatedWorkerPod", f"Created worker Pod w-{index}")
    assert [e.note for e in sink.created[:9]] == [f"Created worker Pod w-{i}" for i in range(9)]
    [combined] = sink.created[9:]
    assert combined.note == "(combined from similar events): Created worker Pod w-9"
    recorder.flush()
    assert sink.updated[-1].count == 91, "the rest counted on the combined Event"
    recorder.record(POD, "Normal", "DeletedWorkerPod", "Deleted worker Pod w-1")
    assert sink.created[-1].note == "Deleted worker Pod w-1", "another reason, its own count"
    clock.advance(601)
    recorder.record(POD, "Normal", "CreatedWorkerPod", "Created worker Pod w-100")
    assert sink.created[-1].note == "Created worker Pod w-100", "10 quiet minutes start over"
