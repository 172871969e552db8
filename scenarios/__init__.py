"""whatif scenarios: schema, runner, results writer, report, validation harness, shipped scenarios."""
