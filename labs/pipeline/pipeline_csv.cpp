// The pipeline lab's schedule files (labs/pipeline/pipeline_lab.h): --schedule-csv reads one in
// torch.distributed.pipelining's CSV format (core/theory/schedule_csv.h parses and checks it),
// --export-csv writes the run's schedule in it.
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "labs/pipeline/pipeline_lab.h"

namespace dtl {

// --schedule-csv: the file read and checked (UsageError names its row, cell and rule), and
// the run's P and M taken from it.
void read_schedule_csv(const LabConfig& cfg, PipelineSettings& s, int P) {
  if (pipeline_option_table().given(cfg.options, &PipelineSettings::schedule))
    throw UsageError("--schedule-csv runs the file's schedule; drop --schedule (or --schedule-csv)");
  std::ifstream in(s.schedule_csv);
  if (!in) throw UsageError("--schedule-csv " + s.schedule_csv + ": cannot read the file; check the path");
  std::stringstream text;
  text << in.rdbuf();
  auto csv = std::make_shared<pipeline::CsvSchedule>(pipeline::read_torch_csv(text.str()));
  const pipeline::ScheduleConfig& c = csv->schedule.config;
  if (c.stages != P)
    throw UsageError("--schedule-csv " + s.schedule_csv + " has " + std::to_string(c.stages) +
                     " rows (ranks) but --ranks is " + std::to_string(P) + ": give --ranks " +
                     std::to_string(c.stages));
  const bool m_given = pipeline_option_table().given(cfg.options, &PipelineSettings::micro_batches);
  if (m_given && s.micro_batches != c.micro_batches)
    throw UsageError("--micro-batches " + std::to_string(s.micro_batches) + " but " + s.schedule_csv + " runs " +
                     std::to_string(c.micro_batches) + " (micro-batches 0.." + std::to_string(c.micro_batches - 1) +
                     "): drop --micro-batches");
  s.micro_batches = c.micro_batches;
  s.csv = std::move(csv);
}

void export_schedule_csv(const PipelineSettings& s, const pipeline::Schedule& sched) {
  std::ofstream out(s.export_csv);
  out << pipeline::write_torch_csv(sched);
  if (!out) throw UsageError("--export-csv " + s.export_csv + ": cannot write the file; check the path");
}

}  // namespace dtl
