"""The runner: experiments, arms, scheduling, resume, audit read-back, manifest.

Public API (import from the modules; this package stays import-light)::

    dabench.runner.experiment  Experiment, ArmConfig, load_experiment, builtin_experiment,
                               apply_overrides
    dabench.runner.run         ExperimentRun(exp, run_dir, experiment_dir=, resume=).execute()
                               -> RunSummary; resolve_world, load_task_set
    dabench.runner.protocols   register_protocol_runner, ProtocolRequest, protocol_slot
    dabench.runner.commands    the ``dabench run`` command
"""
