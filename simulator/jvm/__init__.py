"""A Java virtual machine on the processor models (seed 003 ch. 4, HBench:Java): interpreted and compiled
Java methods, class loading, monitors, allocation into the simulated heap and native methods that call
the operating-system primitives, all executed as instruction streams by a platform's core."""
