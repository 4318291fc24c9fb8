// Buffered observer calls and their replay in (time, source, call order).
#include "sim/metrics/observer_buffer.hpp"

#include <algorithm>
#include <tuple>

namespace servesim {

void ObserverBuffer::keep(Kind kind, std::uint32_t id, TimeNs now, const Request* r) {
  std::uint32_t payload = 0;
  if (r) {
    payload = static_cast<std::uint32_t>(requests_.size());
    requests_.push_back(*r);
  }
  calls_.push_back(Call{now, id, kind, payload});
}

void ObserverBuffer::on_iteration(const IterationRecord& it) {
  calls_.push_back(Call{it.start_ns, 0, Kind::iteration, static_cast<std::uint32_t>(iterations_.size())});
  iterations_.push_back(it);
}

void ObserverBuffer::replay(const Call& c, RunObserver& out) const {
  switch (c.kind) {
    case Kind::arrival: out.on_arrival(c.id, requests_[c.payload], c.time); break;
    case Kind::rejected: out.on_rejected(c.id, requests_[c.payload], c.time); break;
    case Kind::admitted: out.on_admitted(c.id, c.time); break;
    case Kind::prefill_done: out.on_prefill_done(c.id, c.time); break;
    case Kind::preempted: out.on_preempted(c.id, c.time); break;
    case Kind::finished: out.on_finished(c.id, requests_[c.payload], c.time); break;
    case Kind::iteration: out.on_iteration(iterations_[c.payload]); break;
  }
}

void ObserverBuffer::flush(std::span<ObserverBuffer* const> buffers, RunObserver& out) {
  // Each buffer's calls are in time order already; one buffer needs no sort.
  struct Key {
    TimeNs time;
    std::uint32_t source, order;
    const ObserverBuffer* buffer;
  };
  std::vector<Key> keys;
  for (const ObserverBuffer* b : buffers) {
    for (std::size_t i = 0; i < b->calls_.size(); ++i) {
      keys.push_back(Key{b->calls_[i].time, b->source_, static_cast<std::uint32_t>(i), b});
    }
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.time, a.source, a.order) < std::tie(b.time, b.source, b.order);
  });
  for (const Key& k : keys) k.buffer->replay(k.buffer->calls_[k.order], out);
  for (ObserverBuffer* b : buffers) {
    b->calls_.clear();
    b->requests_.clear();
    b->iterations_.clear();
  }
}

}  // namespace servesim
