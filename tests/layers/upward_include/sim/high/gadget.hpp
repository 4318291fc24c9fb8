// Fixture: the higher layer includes the lower one, as it may; with widget.hpp it closes a cycle.
#pragma once
#include "sim/low/widget.hpp"
