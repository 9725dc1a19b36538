"""EnvSuccessCallback's account of an SFT warm start that missed its target."""

from tool_envs.integrations.trl.callbacks import EnvSuccessCallback


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
