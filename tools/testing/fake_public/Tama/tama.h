// Fake TAMA for scripts_test (see ../data_structure.h).
#ifndef COHORT_TOOLS_TESTING_FAKE_PUBLIC_TAMA_H_
#define COHORT_TOOLS_TESTING_FAKE_PUBLIC_TAMA_H_

#include "../data_structure.h"

class Tama : public FakeIntervalMatcher {
 public:
  Tama(int /*atts*/, int /*valDom*/, int /*level*/) {}
};

#endif  // COHORT_TOOLS_TESTING_FAKE_PUBLIC_TAMA_H_
