// Fake REIN for scripts_test (see ../data_structure.h).
#ifndef COHORT_TOOLS_TESTING_FAKE_PUBLIC_REIN_H_
#define COHORT_TOOLS_TESTING_FAKE_PUBLIC_REIN_H_

#include "../data_structure.h"

class Rein : public FakeIntervalMatcher {
 public:
  explicit Rein(int /*valDom*/) {}
};

#endif  // COHORT_TOOLS_TESTING_FAKE_PUBLIC_REIN_H_
