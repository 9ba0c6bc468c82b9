"""ServerConfig from flags and CHATTTS_RT_* environment variables."""

from __future__ import annotations

import pytest

from realtime.server.config import ConfigError, ServerConfig, load_config


def test_defaults():
    command, cfg = load_config([], {})
    assert command == "serve"
    assert (cfg.host, cfg.port, cfg.weights, cfg.max_text_chars, cfg.max_active) == (
        "127.0.0.1", 8765, "auto", 5000, 8)
    assert cfg.batch_sizes == (1, 2, 4, 8) and cfg.interactive_batch_size == 1
    assert cfg.max_message_bytes == 65536 and cfg.max_connections == 2000
    assert cfg.default_deadline_ms == 60000 and cfg.drain_timeout == 30


def test_environment_is_read_and_flags_win():
    env = {"CHATTTS_RT_PORT": "9000", "CHATTTS_RT_WEIGHTS": "tiny-random",
           "CHATTTS_RT_AUTH_TOKEN": "a, b", "CHATTTS_RT_ALLOWED_ORIGIN": "https://x.example",
           "CHATTTS_RT_LOG_JSON": "true", "CHATTTS_RT_BATCH_SIZES": "8,1,4",
           "CHATTTS_RT_DRAIN_TIMEOUT": "2.5"}
    _, cfg = load_config(["serve", "--port", "9001", "--auth-token", "c", "--auth-token", "d"], env)
    assert cfg.port == 9001  # flag wins
    assert cfg.weights == "tiny-random"  # from the environment
    assert cfg.auth_tokens == ("c", "d")
    assert cfg.allowed_origins == ("https://x.example",)
    assert cfg.log_json is True and cfg.batch_sizes == (1, 4, 8) and cfg.drain_timeout == 2.5


def test_env_tokens_are_comma_separated():
    _, cfg = load_config([], {"CHATTTS_RT_AUTH_TOKEN": "one,two"})
    assert cfg.auth_tokens == ("one", "two") and cfg.auth_required


def test_no_subcommand_is_serve_and_flags_work_there_too():
    command, cfg = load_config(["--max-active", "3", "--require-weights"], {})
    assert command == "serve" and cfg.max_active == 3 and cfg.require_weights


@pytest.mark.parametrize("argv, env", [
    (["--device", "tpu"], {}),
    (["--precision", "int3"], {}),
    ([], {"CHATTTS_RT_MAX_ACTIVE": "lots"}),
    ([], {"CHATTTS_RT_LOG_JSON": "maybe"}),
    (["--interactive-batch-size", "16"], {}),
])
def test_bad_values_raise_config_error(argv, env):
    with pytest.raises(ConfigError):
        load_config(argv, env)


def test_bad_flag_exits():
    with pytest.raises(SystemExit):
        load_config(["--batch-sizes", "0,x"], {})


def test_tokens_hidden_from_repr_and_summary():
    cfg = ServerConfig(auth_tokens=("hunter2",))
    assert "hunter2" not in repr(cfg)
    summary = cfg.summary()
    assert summary["auth_tokens"] == 1 and "hunter2" not in str(summary)


def test_runtime_options_carry_the_model_settings():
    _, cfg = load_config(["--weights", "random", "--max-slots", "32", "--kv-buckets", "512,256",
                          "--lookahead-steps", "4", "--device", "cpu"], {})
    opts = cfg.runtime_options()
    assert (opts.weights, opts.max_slots, opts.kv_buckets, opts.lookahead_steps, opts.device) == (
        "random", 32, (256, 512), 4, "cpu")


def test_every_engine_setting_of_the_config_reaches_the_engine_and_defaults_alike():
    """A field both configs name is copied by name: a value set on the server
    arrives unchanged, and an unset one is the engine's own default."""
    from dataclasses import fields, replace

    from realtime.engine.api import RuntimeOptions

    own = {"voices", "cache_dir", "auto_shapes"}  # resolved or defaulted by the server
    shared = [f.name for f in fields(RuntimeOptions)
              if f.name in {g.name for g in fields(ServerConfig)} and f.name not in own]
    assert {"weights", "precision", "cpu_engine", "max_slots", "eos_read"} <= set(shared)
    engine = RuntimeOptions()
    for name in shared:
        assert getattr(ServerConfig(), name) == getattr(engine, name), name
        value = getattr(engine, name)
        changed = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                   else value + (99,) if isinstance(value, tuple) else f"{value}-x")
        assert getattr(replace(ServerConfig(), **{name: changed}).runtime_options(), name) == changed


def test_every_flag_is_documented_with_its_environment_variable():
    from pathlib import Path

    from realtime.server.config import _OPTIONS

    doc = (Path(__file__).resolve().parent.parent / "docs" / "server.md").read_text()
    for flag, _dest, _kind, _help in _OPTIONS:
        env = "CHATTTS_RT_" + flag.lstrip("-").replace("-", "_").upper()
        assert f"`{flag}`" in doc, flag
        assert f"`{env}`" in doc, env


def test_cpu_fallback_flags_reach_the_runtime():
    _, cfg = load_config(["--cpu-threads", "1", "--precision", "int8", "--device", "cpu"], environ={})
    opts = cfg.runtime_options()
    assert (opts.cpu_threads, opts.precision) == (1, "int8")
    _, cfg = load_config([], environ={"CHATTTS_RT_CPU_THREADS": "3"})
    assert cfg.cpu_threads == 3
    assert ServerConfig().cpu_threads == 0
    _, cfg = load_config(["--cpu-engine", "ort", "--precision", "int4"], environ={})
    assert (cfg.runtime_options().cpu_engine, cfg.runtime_options().precision) == ("ort", "int4")
    assert ServerConfig().runtime_options().cpu_engine == "auto"


@pytest.mark.parametrize("argv, message", [
    (["--precision", "bf16", "--device", "cpu"], "CUDA mode"),
    (["--precision", "int2"], "--precision"),
    (["--precision", "int8", "--device", "cuda"], "CPU mode"),
    (["--precision", "int4", "--device", "cuda"], "CPU mode"),
    (["--cpu-engine", "openvino"], "--cpu-engine"),
])
def test_cpu_fallback_flags_are_validated(argv, message):
    with pytest.raises(ConfigError, match=message):
        load_config(argv, environ={})


def test_negative_cpu_threads_are_refused():
    with pytest.raises(SystemExit):
        load_config(["--cpu-threads", "-1"], environ={})
    with pytest.raises(ConfigError, match="CHATTTS_RT_CPU_THREADS"):
        load_config([], environ={"CHATTTS_RT_CPU_THREADS": "-2"})


def test_vocoder_flags_reach_the_runtime():
    _, cfg = load_config(["--vocoder-overlap", "on", "--vocoder-precision", "bf16"], environ={})
    opts = cfg.runtime_options()
    assert (opts.vocoder_overlap, opts.vocoder_precision) == ("on", "bf16")
    _, cfg = load_config([], environ={"CHATTTS_RT_VOCODER_OVERLAP": "off"})
    assert cfg.runtime_options().vocoder_overlap == "off"
    assert (ServerConfig().vocoder_overlap, ServerConfig().vocoder_precision) == ("auto", "auto")


def test_the_eos_read_flag_reaches_the_runtime():
    _, cfg = load_config(["--eos-read", "blocking"], environ={})
    assert cfg.runtime_options().eos_read == "blocking" and ServerConfig().eos_read == "auto"
    with pytest.raises(ConfigError, match="--eos-read must be one of auto, deferred, blocking"):
        load_config(["--eos-read", "later"], environ={})


@pytest.mark.parametrize("argv, message", [
    (["--vocoder-overlap", "later"], "--vocoder-overlap must be one of auto, on, off"),
    (["--vocoder-precision", "fp8"], "--vocoder-precision must be one of"),
    (["--vocoder-precision", "tf32", "--device", "cpu"], "CUDA mode"),
])
def test_vocoder_flags_are_validated(argv, message):
    with pytest.raises(ConfigError, match=message):
        load_config(argv, environ={})
