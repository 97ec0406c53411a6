"""Where a Foundry team already works: OpenTelemetry evaluation events, JUnit XML, the GitHub step summary.

Each module turns a built ``Report`` or ``Comparison`` into another tool's format; none of them computes a number
of its own. The third-party libraries (opentelemetry-sdk, its exporters) are imported inside the functions that
need them, so importing this package costs nothing.
"""
