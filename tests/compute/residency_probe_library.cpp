// A shared library for driver_residency_test to load, close and look for, as the Vulkan
// loader does with a driver.
extern "C" int residency_probe_value() { return 42; }
