// Fixture: a lower layer reaching up (the planted violation the layer check must catch).
#pragma once
#include "sim/high/gadget.hpp"
