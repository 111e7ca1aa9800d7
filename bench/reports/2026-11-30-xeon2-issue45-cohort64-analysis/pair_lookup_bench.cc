// Times the pair lookups a cohort of 64 fabret-1m events would make under
// access by pairs of equalities: each event's 120 pairs of (attribute,
// value), each asked of a Bloom filter and, if it may hold, of a hash set
// of the subscriptions' pairs (their two rarest EQs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_set.h"

static uint32_t Code(const std::string& attr, long v) {
  return static_cast<uint32_t>(std::stoi(attr.substr(1)) * 1000 + v);
}
static uint64_t Key(uint32_t a, uint32_t b) {
  if (a > b) std::swap(a, b);
  return uint64_t{a} << 32 | b;
}
static uint64_t Mix(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33; return k;
}

int main(int argc, char** argv) {
  std::ifstream in(argv[1]);
  std::string line;
  std::vector<std::vector<uint32_t>> subs;
  std::vector<std::vector<uint32_t>> events;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string tag; ss >> tag;
    if (tag == "S") {
      int n; ss >> n; std::vector<uint32_t> eqs;
      for (int i = 0; i < n; ++i) {
        std::string a, op; long v, u; ss >> a >> op >> v;
        if (op == "BETWEEN") ss >> u;
        if (op == "EQ") eqs.push_back(Code(a, v));
      }
      subs.push_back(eqs);
    } else if (tag == "E") {
      int n; ss >> n; std::vector<uint32_t> e;
      for (int i = 0; i < n; ++i) { std::string a; long v; ss >> a >> v; e.push_back(Code(a, v)); }
      events.push_back(e);
    }
  }
  std::unordered_map<uint32_t, uint32_t> freq;
  for (auto& s : subs) for (uint32_t p : s) ++freq[p];
  absl::flat_hash_set<uint64_t> pairs;
  for (auto& s : subs) {
    if (s.size() < 2) continue;
    std::sort(s.begin(), s.end(), [&](uint32_t a, uint32_t b) { return freq[a] < freq[b]; });
    pairs.insert(Key(s[0], s[1]));
  }
  const size_t bits = size_t{1} << 24;  // 2 MB, about 20 bits a pair
  std::vector<uint64_t> bloom(bits / 64);
  for (uint64_t k : pairs) {
    const uint64_t h = Mix(k);
    bloom[(h & (bits - 1)) >> 6] |= 1ULL << (h & 63);
    bloom[((h >> 32) & (bits - 1)) >> 6] |= 1ULL << ((h >> 32) & 63);
  }
  std::printf("pairs %zu events %zu\n", pairs.size(), events.size());
  for (int mode = 0; mode < 2; ++mode) {
    for (int rep = 0; rep < 3; ++rep) {
      uint64_t found = 0, probes = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& e : events) {
        for (size_t i = 0; i < e.size(); ++i) {
          for (size_t j = i + 1; j < e.size(); ++j) {
            const uint64_t k = Key(e[i], e[j]);
            if (mode == 1) {
              const uint64_t h = Mix(k);
              if (!(bloom[(h & (bits - 1)) >> 6] >> (h & 63) & 1) ||
                  !(bloom[((h >> 32) & (bits - 1)) >> 6] >> ((h >> 32) & 63) & 1)) {
                continue;
              }
            }
            ++probes;
            found += pairs.contains(k);
          }
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s: %.1f us a cohort of 64 (%.1f ns a pair), %.0f probes and %.0f found a cohort\n",
                  mode ? "filter, then set" : "set only", s * 1e6 / (events.size() / 64.0),
                  s * 1e9 / (events.size() * 120.0), probes / (events.size() / 64.0),
                  found / (events.size() / 64.0));
    }
  }
}
