"""Spark glue: DataFrames, shuffles and the engine's task functions inside mapInArrow."""
