import torch

from benchctl.machine.caches import CacheSize
from benchctl.measure import flush
from benchctl.measure.execute import make_clock


def test_the_cpu_buffer_is_twice_the_largest_level_of_all_cores(monkeypatch):
    levels = [CacheSize("L2", 1 << 20, 1), CacheSize("L3", 32 << 20, 8)]
    monkeypatch.setattr(flush, "cpu_caches", lambda: levels)
    assert flush.cpu_flush_bytes(cpus=16) == 2 * 2 * (32 << 20)  # two L3 instances of 8 CPUs each, twice over
    assert flush.cpu_flush_bytes(cpus=2) == flush.LEAST_BYTES  # one 32 MiB L3: 64 MiB, the least anyway
    monkeypatch.setattr(flush, "cpu_caches", lambda: [])
    assert flush.cpu_flush_bytes(cpus=4) == flush.LEAST_BYTES  # the kernel did not say


def test_the_cpu_flush_reads_every_byte_of_a_buffer_of_its_own(monkeypatch):
    made = []
    real_ones = torch.ones
    monkeypatch.setattr(torch, "ones", lambda *a, **k: made.append(real_ones(*a, **k)) or made[-1])
    thunk = flush.cpu_flusher(1 << 20)
    assert made[0].numel() * made[0].element_size() == 1 << 20
    assert float(thunk()) == made[0].numel()  # a read of all of it: its pages written once, so not the zero page


def test_a_flushing_cpu_clock_runs_the_flush_before_each_call(monkeypatch):
    flushes, made = [], []
    monkeypatch.setattr(flush, "_MADE", {})
    monkeypatch.setattr(flush, "cpu_flush_bytes", lambda: 1 << 16)
    monkeypatch.setattr(flush, "cpu_flusher", lambda nbytes: made.append(nbytes) or (lambda: flushes.append(nbytes)))
    clock = make_clock("cpu", flush_l2=True)
    for _ in range(3):
        clock.time(lambda: None)
    assert flushes == [1 << 16] * 3
    assert make_clock("cpu").before is None
    # a partner's clock, and the next cell's, flush with the same buffer: one made in the process
    assert make_clock("cpu", flush_l2=True).before is clock.before and made == [1 << 16]


def test_each_gpu_of_a_process_gets_a_flush_buffer_of_its_own(monkeypatch):
    """The buffer lives on the GPU it is made on: one a device index, and the CPU's apart."""
    monkeypatch.setattr(flush, "_MADE", {})
    current, made = [0], []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current[0])
    monkeypatch.setattr(flush, "gpu_flusher", lambda: made.append(current[0]) or (lambda: current[0]))
    monkeypatch.setattr(flush, "cpu_flusher", lambda nbytes: made.append("cpu") or (lambda: None))
    first = flush.flusher("cuda")
    current[0] = 1
    second = flush.flusher("cuda")
    assert flush.flusher("cuda") is second and second is not first and flush.flusher("cpu") is not None
    current[0] = 0
    assert flush.flusher("cuda") is first and made == [0, 1, "cpu"]
