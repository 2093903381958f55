# Injected into the consumer's configure to ask for a version no install provides.
find_package(daydream 99.0 REQUIRED)
