"""EnvSuccessCallback: the account of an SFT warm start that missed its target, and the weights
it keeps when success jumps past the target."""

import json

import pytest
from callback_helpers import FixedEvaluator, end_steps
from transformers import TrainerCallback, TrainerControl

from tool_envs.integrations.trl.callbacks import EnvSuccessCallback
from tool_envs.tiny_models import build_model


def callback(stop_at, history):
    success = EnvSuccessCallback(tokenizer=None, tasks=[{}] * 50, stop_at=stop_at)
    success.history = list(history)
    return success


def test_a_reached_target_has_no_shortfall():
    success = callback(0.3, [(20, 0.0), (40, 0.36)])
    assert success.reached is True and success.shortfall(40) is None


def test_a_missed_target_names_the_best_check_and_what_to_do():
    success = callback(0.3, [(20, 0.04), (40, 0.12), (60, 0.08)])
    assert success.reached is False
    message = success.shortfall(600)
    assert "never reached 0.30 on the 50 check tasks within 600 steps" in message
    assert "best 0.12 at step 40" in message and "raise max_steps" in message


def test_no_target_no_verdict():
    success = callback(None, [(20, 0.0)])
    assert success.reached is None and success.shortfall(20) is None


def test_a_target_never_checked_is_a_shortfall():
    success = callback(0.3, [])
    assert "best 0.00 at step 0" in success.shortfall(10)


# ------------------------------------------------ landing near the target: a real Trainer and model
# A real tiny model trains in a real Trainer; the checks are scripted by step, but a check scores
# the weights the model holds: the evaluator finds which step's weights they are (a recorder
# callback hashes them after every update), so a rewind or a restore that does not happen, or puts
# back the wrong weights, changes what the checks and the saved model say.


def weights_hash(model):
    import hashlib

    digest = hashlib.sha256()
    for _, param in sorted(model.named_parameters()):
        digest.update(param.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


class Recorder(TrainerCallback):
    """Remembers which step produced which weights (runs before the success callback)."""

    def __init__(self):
        self.step_of = {}

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.step_of.setdefault(weights_hash(model), 0)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.step_of.setdefault(weights_hash(model), state.global_step)


class ScriptedEvaluator:
    """Success by the step whose weights the model holds: ``curve[step]``."""

    def __init__(self, recorder, curve):
        self.recorder, self.curve = recorder, curve
        self.tasks = [{}] * 50
        self.scored = []  # the step of the weights each check saw

    def success(self, model):
        step = self.recorder.step_of[weights_hash(model)]
        self.scored.append(step)
        return self.curve(step)


class Vocabulary:
    """What build_model reads of a tokenizer."""

    eos_token_id, pad_token_id = 1, 0

    def __len__(self):
        return 32


def train_with_checks(
    tmp_path, curve, max_steps=40, recorder=None, save=False, resume=None, **options
):
    """Train a tiny Qwen2 with the callback; return (callback, evaluator, recorder, saved model).

    ``save``: a checkpoint every step; ``resume``: a checkpoint to go on from (pass the recorder
    of the run that saved it: it knows which step produced which weights)."""
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    sizes = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1}
    model = build_model(Vocabulary(), intermediate_size=32, **sizes)  # tied embeddings
    rows = [{"input_ids": [i % 32, (i + 1) % 32, (i + 3) % 32] * 2} for i in range(64)]
    rows = [{**row, "labels": row["input_ids"]} for row in rows]
    recorder = recorder or Recorder()
    evaluator = ScriptedEvaluator(recorder, curve)
    options = {"every_steps": 4, "every_steps_near": 1, "stop_at": 0.3, **options}
    success = EnvSuccessCallback(None, [], evaluator=evaluator, **options)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        use_cpu=True,
        report_to=[],
        save_strategy="steps" if save else "no",
        save_steps=1,
        logging_strategy="no",
        disable_tqdm=True,
        resume_from_checkpoint=None if resume is None else str(resume),
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[recorder, success])
    trainer.train(resume_from_checkpoint=None if resume is None else str(resume))
    trainer.save_model(str(tmp_path / "saved"))
    saved = AutoModelForCausalLM.from_pretrained(str(tmp_path / "saved"))
    return success, evaluator, recorder, saved


def test_an_overshoot_rewinds_and_the_saved_model_is_the_check_nearest_the_target(tmp_path):
    # Coarse checks every 4 steps see 0.02 at step 8, then 0.70 at step 12 (the Calculator jump).
    def curve(step):
        return {4: 0.0, 8: 0.02, 12: 0.70, 13: 0.10, 14: 0.28, 15: 0.36}.get(step, 0.9)

    success, evaluator, recorder, saved = train_with_checks(tmp_path, curve)
    # 12 overshot 0.3 + 0.1: back to step 8's weights, then a check every step from there.
    assert success.history == [(4, 0.0), (8, 0.02), (12, 0.70), (13, 0.10), (14, 0.28), (15, 0.36)]
    assert success.rewinds == [{"step": 12, "success": 0.70, "back_to": 8, "back_success": 0.02}]
    # The check at step 13 scored step 8's weights plus one update: not those of step 12.
    assert evaluator.scored == [4, 8, 12, 13, 14, 15]
    # Stopped at 15 (0.36 >= 0.3); 0.28 at step 14 is nearer 0.3, and its weights are saved.
    assert success.saved == {"step": 14, "success": 0.28, "updates": 10}
    assert recorder.step_of[weights_hash(saved)] == 14
    assert not (tmp_path / "out" / "target-snapshot").exists()
    path = success.write_summary(tmp_path / "sft_summary.json", 15)
    summary = json.loads(path.read_text())
    assert summary["saved"] == {"step": 14, "success": 0.28, "updates": 10}
    assert summary["checks"][-1] == [15, 0.36] and summary["reached"] is True
    assert summary["rewinds"][0]["back_to"] == 8


def test_a_disk_snapshot_puts_back_the_same_weights(tmp_path):
    def curve(step):
        return {4: 0.0, 8: 0.02, 12: 0.70, 13: 0.10, 14: 0.28, 15: 0.36}.get(step, 0.9)

    success, _, recorder, saved = train_with_checks(tmp_path, curve, snapshot="disk")
    assert success.saved["step"] == 14 and recorder.step_of[weights_hash(saved)] == 14
    assert not (tmp_path / "out" / "target-snapshot").exists()  # removed at the end


def test_checks_come_every_step_once_success_is_near_the_target(tmp_path):
    def curve(step):
        return {4: 0.0, 8: 0.22, 9: 0.26, 10: 0.33}.get(step, 0.9)

    success, _, recorder, saved = train_with_checks(tmp_path, curve)
    assert [step for step, _ in success.history] == [4, 8, 9, 10]
    # 0.33 is nearer 0.3 than 0.26: the last step's weights stay.
    assert success.saved == {"step": 10, "success": 0.33, "updates": 10}
    assert recorder.step_of[weights_hash(saved)] == 10 and not success.rewinds


def test_a_rising_trend_brings_the_fine_checks_before_the_margin(tmp_path):
    # 0.02 -> 0.12 in 4 steps: by the next coarse check the line is past 0.3 - 0.1.
    def curve(step):
        return {4: 0.02, 8: 0.12, 9: 0.16, 10: 0.31}.get(step, 0.9)

    success, *_ = train_with_checks(tmp_path, curve)
    assert [step for step, _ in success.history] == [4, 8, 9, 10]


def test_a_check_just_past_the_target_loses_to_a_nearer_one_below(tmp_path):
    def curve(step):
        return {4: 0.0, 8: 0.22, 9: 0.29, 10: 0.38}.get(step, 0.9)

    success, _, recorder, saved = train_with_checks(tmp_path, curve)
    assert not success.rewinds  # 0.38 is within the overshoot bound 0.4
    assert success.saved["step"] == 9 and recorder.step_of[weights_hash(saved)] == 9


def test_without_a_snapshot_the_last_step_is_saved_as_before(tmp_path):
    def curve(step):
        return {4: 0.0, 8: 0.02, 12: 0.70}.get(step, 0.9)

    success, _, recorder, saved = train_with_checks(tmp_path, curve, snapshot=None)
    assert success.history[-1] == (12, 0.70) and not success.rewinds
    assert success.saved == {"step": 12, "success": 0.70, "updates": 12}
    assert recorder.step_of[weights_hash(saved)] == 12


def test_rewinds_are_bounded(tmp_path):
    # Every check past the first overshoots: three rewinds, then the nearest check is kept.
    def curve(step):
        return 0.0 if step == 4 else 0.9

    success, _, recorder, saved = train_with_checks(tmp_path, curve, max_rewinds=3)
    assert [r["step"] for r in success.rewinds] == [8, 9, 10]
    assert success.history[-1] == (11, 0.9)
    # 0.0 (step 4's weights, put back) is nearer 0.3 than 0.9.
    assert success.saved["step"] == 4 and recorder.step_of[weights_hash(saved)] == 4


def test_each_check_logs_where_its_failures_left_the_gold(tmp_path, capsys):
    from tool_envs.eval.departures import Departure

    departure = Departure("a", 2, '<tool_call>{"name": "f"}</tool_call>', "hi")
    located = FixedEvaluator(0.25, [departure] * 3)
    callback = EnvSuccessCallback(None, [], evaluator=located, every_steps=5)
    end_steps(callback, tmp_path, (5, 10), object())
    assert "step 10: first departures from the gold: turn 2: f x3" in capsys.readouterr().out
    records = [
        json.loads(line)
        for line in (tmp_path / "greedy_checks.jsonl").read_text().split("\n")
        if line
    ]
    assert [r["step"] for r in records] == [5, 10]
    assert records[0]["departures"][0] == {
        "task_id": "a",
        "turn": 2,
        "expected": '<tool_call>{"name": "f"}</tool_call>',
        "said": "hi",
    }


# ------------------------------------------------ resuming from a checkpoint


OVERSHOOT = {4: 0.0, 8: 0.02, 12: 0.70, 13: 0.10, 14: 0.28, 15: 0.36}


@pytest.mark.parametrize("step", [6, 12, 13, 14])
def test_a_run_resumed_from_a_checkpoint_checks_and_keeps_as_one_never_stopped(tmp_path, step):
    """Resumed at 6 (coarse checks), 12 (just rewound to step 8's weights), 13 (fine checks, a
    kept snapshot) or 14 (the snapshot the end puts back): the same checks, rewinds and saved
    weights as the run that never stopped."""
    import shutil

    def curve(at):
        return OVERSHOOT.get(at, 0.9)

    whole, _, recorder, whole_model = train_with_checks(tmp_path / "whole", curve, save=True)
    checkpoint = tmp_path / "whole" / "out" / f"checkpoint-{step}"
    assert (checkpoint / EnvSuccessCallback.STATE_FILE).is_file()
    assert (checkpoint / EnvSuccessCallback.SNAPSHOT_FILE).is_file() == (step >= 4)
    resumed_from = tmp_path / "resumed" / "out" / checkpoint.name  # what a killed run leaves
    shutil.copytree(checkpoint, resumed_from)
    resumed, evaluator, _, resumed_model = train_with_checks(
        tmp_path / "resumed", curve, recorder=recorder, resume=resumed_from
    )
    assert resumed.history == whole.history
    assert resumed.rewinds == whole.rewinds
    assert resumed.saved == whole.saved == {"step": 14, "success": 0.28, "updates": 10}
    assert evaluator.scored == [at for at, _ in whole.history if at > step]  # no check redone
    assert weights_hash(resumed_model) == weights_hash(whole_model)
    assert recorder.step_of[weights_hash(resumed_model)] == 14


def test_a_checkpoint_without_the_checks_state_is_refused_by_name(tmp_path):
    def curve(at):
        return OVERSHOOT.get(at, 0.9)

    train_with_checks(tmp_path / "whole", curve, save=True)
    checkpoint = tmp_path / "whole" / "out" / "checkpoint-6"
    (checkpoint / EnvSuccessCallback.STATE_FILE).unlink()
    with pytest.raises(ValueError, match=f"{checkpoint}: no env_success_state.json there"):
        train_with_checks(tmp_path / "resumed", curve, resume=checkpoint)


def test_a_resume_the_callback_was_not_told_of_is_an_error(tmp_path):
    from transformers import Trainer, TrainingArguments

    def curve(at):
        return OVERSHOOT.get(at, 0.9)

    _, _, recorder, _ = train_with_checks(tmp_path / "whole", curve, save=True, max_steps=6)
    sizes = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1}
    model = build_model(Vocabulary(), intermediate_size=32, **sizes)
    rows = [{"input_ids": [1, 2, 3], "labels": [1, 2, 3]}] * 64
    success = EnvSuccessCallback(None, [], evaluator=ScriptedEvaluator(recorder, curve))
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=8, use_cpu=True, report_to=[]
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[success])
    checkpoint = tmp_path / "whole" / "out" / "checkpoint-6"
    with pytest.raises(ValueError, match="resumed at step 6 from a checkpoint this callback"):
        trainer.train(resume_from_checkpoint=str(checkpoint))


def test_the_reward_signal_watch_warns_once_per_quiet_stretch_and_at_the_end():
    """TRL's own log keys (``frac_reward_zero_std``, or ``reward_std`` where a trainer logs only
    that) through the Trainer's own state and control objects."""
    from transformers import TrainerState

    from tool_envs.integrations.trl.callbacks import RewardSignalWatch

    lines: list[str] = []
    watch = RewardSignalWatch(steps=3, echo=lines.append)
    state, control = TrainerState(), TrainerControl()
    for step, quiet in enumerate([1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0], start=1):
        state.global_step = step
        watch.on_log(None, state, control, logs={"frac_reward_zero_std": quiet, "loss": 0.0})
    [line] = lines
    assert line.startswith("WARNING: no reward signal in steps 4-6: ")
    watch.on_train_end(None, state, control)
    assert len(lines) == 1  # the run had a signal at step 3: no end-of-run verdict

    short: list[str] = []
    watch = RewardSignalWatch(steps=10, echo=short.append)
    for step in (1, 2):
        state.global_step = step
        watch.on_log(None, state, control, logs={"reward_std": 0.0})
    watch.on_train_end(None, state, control)
    [line] = short  # shorter than 10 steps, never a signal: said at the end
    assert line.startswith("WARNING: no reward signal in any of this run's 2 steps:")
