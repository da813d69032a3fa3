"""The compile engine, shared by embedded use and the service: prepare a graph once, plan the
targets, fan the compiles out to the worker pool, collect the results."""
