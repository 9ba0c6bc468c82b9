"""The scheduler and a job's refine pass (``Job.refine_tokens``,
``StepOutput.refining``/``refined``): its steps are counted in the cost of
the job and its first audio, its KV length follows the text tokens while
it lasts and the audio prompt after it, and its steps do not teach the
cost model what a plain (batch, bucket) step costs."""

from __future__ import annotations

from scheduler import CostModel, Job, Lane, Refined, Scheduler, SchedulerConfig, StepOutput

CFG = SchedulerConfig(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128, 256),
                      prompt_buckets=(32, 64, 128))


def job(job_id: int = 1, refine: int = 0, prompt: int = 20, codes: int = 50, utt: str = "u") -> Job:
    return Job(id=job_id, utterance=utt, index=0, lane=Lane.INTERACTIVE, prompt_len=prompt,
               est_tokens=codes, refine_tokens=refine)


def test_remaining_steps_count_the_pass_and_the_audio_prefill():
    plain, refined = job(), job(refine=30)
    assert refined.remaining_tokens == plain.remaining_tokens + 30 + 1
    refined.text_tokens = 10
    assert refined.remaining_tokens == plain.remaining_tokens + 20 + 1
    assert refined.expected_tokens == plain.expected_tokens  # audio length: codes only


def test_kv_length_follows_text_tokens_then_the_audio_prompt():
    sched = Scheduler(CFG, CostModel.default_cpu())
    j = job(refine=30, prompt=40)
    assert sched.admit([j], 0.0) is None
    first = sched.schedule(0.0)
    assert first is not None and first.prefill == (1,) and first.prompt_bucket == 64
    sched.update(first, StepOutput(refining={1: 1}, seconds=0.01), 0.01)
    j.text_tokens = 0  # what the runner reports decides, not a count of steps
    sched.update(first, StepOutput(refining={1: 30}, seconds=0.01), 0.02)
    assert j.kv_len == 40 + 30 + 1 and j.tokens == 0 and j.first_code_at is None
    plan = sched.schedule(0.03)
    assert plan is not None and plan.decode == (1,) and plan.kv_bucket == 128
    sched.update(plan, StepOutput(tokens={1: 1}, refining={1: 30},
                                  refined={1: Refined(prompt_len=90, text="hi [uv_break]")},
                                  seconds=0.01), 0.04)
    assert (j.prompt_len, j.refined, j.refining, j.tokens) == (90, True, False, 1)
    assert j.kv_len == 92 and j.refine_steps_left == 0 and j.first_code_at == 0.04
    sched.check_invariants()


def test_refine_steps_do_not_calibrate_the_cost_model():
    sched = Scheduler(CFG, CostModel.default_gpu())
    a, b = job(1, refine=30), job(2, utt="v")
    assert sched.admit([a], 0.0) is None and sched.admit([b], 0.0) is None
    now, n = 0.0, 0
    plan = sched.schedule(now)
    while plan is not None and (plan.prefill or len(plan.decode) < 2):
        n += 1
        sched.update(plan, StepOutput(tokens={2: n} if 2 in plan.jobs else {},
                                      refining={1: n} if 1 in plan.jobs else {}, seconds=1e-4), now)
        now += 0.05
        plan = sched.schedule(now)
    assert plan is not None and plan.decode == (1, 2) or plan.decode == (2, 1)
    before = sched.cost.table
    sched.update(plan, StepOutput(tokens={2: n + 1}, refining={1: n + 1}, seconds=9.0), now)
    assert sched.cost.table == before
    sched.update(plan, StepOutput(tokens={2: n + 2}, seconds=9.0), now + 0.1)
    assert sched.cost.table != before


def test_first_audio_estimate_waits_for_the_pass():
    sched = Scheduler(CFG, CostModel.default_cpu())
    plain = sched.capacity.start_estimate([job()], 0.0)
    refined = sched.capacity.start_estimate([job(refine=30)], 0.0)
    step = sched.capacity.interval(1, CFG.bucket(job().final_kv_len))
    assert refined.first_audio - plain.first_audio >= 30 * step
    assert refined.alone > plain.alone  # so an idle model is not refused for it
