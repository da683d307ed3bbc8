#!/usr/bin/env bash
# Runs (or resumes) every shipped study and the paper-profile reproductions, then copies their
# small outputs (summaries, mean curves, study.json, headline figures) to docs/studies/<name>/,
# where docs/reproduction.md reads them. The run files stay under results/ (not committed).
#
#   bash studies/publish.sh            # everything (hours of CPU on 2 cores; resumable)
#   bash studies/publish.sh NAME ...   # only these (study file names, or reproduce-queue / reproduce-scheduler)
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(queue-radius-tightness scheduler-unreached primal-dual-scale primal-dual-scale-short linear-trigger-rules safe-mode-queue safe-mode-ablation safe-mode-random safe-mode-scheduler safe-compare-design safe-compare-units safe-compare-thin safe-compare-constraints safe-compare-slow safe-compare-short safe-compare-queue safe-compare-scheduler safe-compare-log scale-support scale-min-epoch-length scale-queue-learning scale-scheduler-learning table1-design table1-validation episodic-design episodic-validation reproduce-queue reproduce-queue-reduced reproduce-scheduler)
NAMES=("${@:-${ALL[@]}}")

publish() {  # publish NAME RESULTS_DIR
    local name=$1 from=$2 to=docs/studies/$1
    mkdir -p "$to"
    cp "$from"/summary.csv "$from"/summary.md "$from"/checkpoints.csv "$from"/study.json "$to"/
    rm -f "$to"/*.png
    # a study over many models (safe-mode-random: 20) is quoted by its tables; its 40 figures stay in results/
    [ "$(ls "$from"/figures/*-frontier.png 2>/dev/null | wc -l)" -gt 4 ] && { echo "published $name -> $to (tables only)"; return; }
    for figure in "$from"/figures/*-frontier.png "$from"/figures/*-overview.png; do
        [ -e "$figure" ] && cp "$figure" "$to"/
    done
    echo "published $name -> $to"
}

publish_episodic() {  # publish_episodic NAME RESULTS_DIR: an episodic study has no checkpoints.csv; every figure is copied
    local name=$1 from=$2 to=docs/studies/$1
    mkdir -p "$to"
    cp "$from"/summary.csv "$from"/summary.md "$from"/study.json "$to"/
    rm -f "$to"/*.png
    cp "$from"/figures/*.png "$to"/
    echo "published $name -> $to"
}

for name in "${NAMES[@]}"; do
    case "$name" in
        episodic-*)
            nice -n 5 curlopt sweep "studies/$name.toml" --jobs 2
            publish_episodic "$name" "results/studies/$name" ;;
        reproduce-queue)
            curlopt reproduce queue --full --seeds 10 --out results/queue
            publish "$name" results/queue ;;
        reproduce-queue-reduced)
            # the README's main job as a newcomer runs it: the reduced scale, safe mode beside the paper's agents
            curlopt reproduce queue --out results/queue-reduced
            publish "$name" results/queue-reduced ;;
        reproduce-scheduler)
            # UC-CURL with linear epochs is left out here: ~500 conic solves per 5·10^4 steps at 0.3-0.7 s each.
            curlopt reproduce scheduler --steps 200000 --seeds 5 \
                --algorithms ps-curl-linear,ps-curl-doubling,uc-curl-doubling --out results/scheduler
            publish "$name" results/scheduler ;;
        *)
            curlopt sweep "studies/$name.toml"
            publish "$name" "results/studies/$name"
            # docs/safe-mode.md's frontier puts safe mode among the fixed-K_ε configurations of another study
            if [ "$name" = safe-mode-queue ]; then python studies/safe_mode_figure.py; fi ;;
    esac
done
