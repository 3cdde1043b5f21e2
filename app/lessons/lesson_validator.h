// What a lesson's values mean, checked after loading: required fields, ids ([a-z0-9-]+,
// unique), every action's argument against the vocabulary, every measure and placeholder,
// every question's solution (choice answer in range, number with unit and a sane tolerance,
// generated ones naming a known generator with valid parameters), the file name. With the
// loaded model's facts, every generated question is also computed and its text filled, so a
// problem that only shows on a real model is found by the author, not the learner.
#pragma once

#include <vector>

#include "app/lessons/lesson.h"
#include "app/lessons/model_facts.h"

namespace servescope::lessons {

// Problems of one lesson, in file order. `model` may be null (then generated questions are
// checked against their generator's parameter list only).
std::vector<Problem> validate_lesson(const Lesson& lesson, const ModelFacts* model = nullptr);

// Problems between lessons: repeated lesson ids or numbers, flashcard ids used twice across
// lessons (learners' progress is kept per card).
std::vector<Problem> validate_collection(const std::vector<Lesson>& lessons);

// One action (a step's run or a question's confirm) against the vocabulary.
void validate_action(const Action& action, const std::string& file, std::vector<Problem>& out);

}  // namespace servescope::lessons
