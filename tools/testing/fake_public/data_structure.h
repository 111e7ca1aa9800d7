// Stand-ins for the public matchers' types that bench/public_driver.cc uses,
// so that scripts_test can run bench/public_matchers.sh without the real
// collection (which is not in this repository). Same names and fields as the
// collection's interface; the code is this project's own.
#ifndef COHORT_TOOLS_TESTING_FAKE_PUBLIC_DATA_STRUCTURE_H_
#define COHORT_TOOLS_TESTING_FAKE_PUBLIC_DATA_STRUCTURE_H_

#include <cstdlib>
#include <vector>

struct IntervalCnt {
  int att;
  int lowValue, highValue;
};

struct IntervalSub {
  int id;
  int size;
  std::vector<IntervalCnt> constraints;
};

struct Pair {
  int att;
  int value;
};

struct Pub {
  int size;
  std::vector<Pair> pairs;
};

const int MAX_SUBS = 2000000;
const int MAX_ATTS = 101;

// Brute force: a subscription matches when every constraint's attribute is
// in the event with a value inside it. With COHORT_FAKE_PUBLIC_WRONG set in
// the environment it misses one match per event, so that a test can show
// that the driver refuses a matcher that is not exact.
class FakeIntervalMatcher {
 public:
  void insert(const IntervalSub& sub) { subs_.push_back(sub); }
  void match(const Pub& pub, int& matchSubs,
             const std::vector<IntervalSub>& /*subList*/) {
    for (const IntervalSub& sub : subs_) {
      bool all = true;
      for (const IntervalCnt& c : sub.constraints) {
        bool holds = false;
        for (const Pair& p : pub.pairs) {
          if (p.att == c.att) {
            holds = c.lowValue <= p.value && p.value <= c.highValue;
            break;
          }
        }
        if (!holds) {
          all = false;
          break;
        }
      }
      matchSubs += all;
    }
    if (wrong_ && matchSubs > 0) --matchSubs;
  }

 private:
  std::vector<IntervalSub> subs_;
  bool wrong_ = std::getenv("COHORT_FAKE_PUBLIC_WRONG") != nullptr;
};

#endif  // COHORT_TOOLS_TESTING_FAKE_PUBLIC_DATA_STRUCTURE_H_
