"""OSWorld's metrics by name: `METRICS[func](result, expected, **options) -> float`, as OSWorld calls them.

Each module here exposes its own `METRICS`; this one merges them, listed by
name so a metric's home is one grep away. Written afresh from what OSWorld's
metrics do (its `desktop_env/evaluators/metrics/`), never copied.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from conway.tasks.metrics import (
    accessibility,
    archives,
    audio_tags,
    browser,
    city_order,
    documents,
    docx_colours,
    docx_texts,
    epub,
    files,
    html_trees,
    image_checks,
    images,
    impress,
    mail,
    media,
    ocr,
    pdfs,
    recordings,
    settings,
    slide_colours,
    system_checks,
    tables,
    text_files,
    values,
    word,
)
from conway.tasks.metrics.inputs import unknown_options

MODULES = (values, files, text_files, tables, documents, docx_texts, docx_colours, word, impress, slide_colours, pdfs,
           images, image_checks, archives, city_order, media, mail, browser, settings, system_checks, epub, audio_tags, html_trees,
           accessibility, recordings, ocr)


def _merge() -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for module in MODULES:
        for name, fn in module.METRICS.items():
            if name in merged:  # two modules claiming one name would make the winner an accident of order
                raise RuntimeError(f"metric {name} is defined in two modules ({module.__name__})")
            merged[name] = fn
    return merged


METRICS: dict[str, Callable[..., Any]] = _merge()


LIBRARIES: dict[str, tuple[str, ...]] = {"compare_docx_files": ("docx",), "compare_pptx_files": ("pptx",),
                                         "compare_table": ("openpyxl", "pandas"), "compare_docx_tables": ("docx",),
                                         "compare_line_spacing": ("docx",), "compare_docx_images": ("docx",),
                                         "compare_pdfs": ("pymupdf",), "check_pdf_pages": ("pymupdf",),
                                         "compare_pdf_images": ("pymupdf",),
                                         **{name: ("docx",) for name in word.METRICS if name != "find_default_font"},
                                         **{name: ("docx",) for name in docx_texts.METRICS},
                                         "evaluate_colored_words_in_tables": ("docx",),
                                         "compare_conference_city_in_order": ("openpyxl",),
                                         "check_slide_orientation_Portrait": ("pptx",),
                                         "check_image_stretch_and_center": ("pptx",),
                                         "evaluate_presentation_fill_to_rgb_distance": ("pptx",),
                                         "fuzzy_place_math": ("docx",), "compare_epub": ("lxml",), "compare_htmls": ("lxml",), "compare_zip_files": ("pymupdf",),
                                         "check_accessibility_tree": ("lxml", "cssselect"),
                                         "compare_audios": ("librosa", "fastdtw", "scipy"),
                                         "compare_videos": ("cv2", "imagehash")}
"""The document libraries (the `tasks` extra) a metric reads its files with (`inputs.library`); a task whose
metric needs one that is not installed is not runnable here, rather than an error in the success rate."""


OPTIONS: dict[str, tuple[str, ...]] = {name: tuple(keys) for module in MODULES
                                       for name, keys in getattr(module, "OPTIONS", {}).items()}
"""The options of each metric that refuses any other (its module's `OPTIONS`)."""


def _beyond_signature(fn: Callable[..., Any], options: dict[str, Any]) -> list[str]:
    """For a metric with no `**options`: the keys its signature does not name past the result (the call would
    raise TypeError: OSWorld's function, of the same parameters, raises too)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)][1:]
    return unknown_options(options, names)


def unsupported_options(func: str, options: dict[str, Any]) -> list[str]:
    """The options of one evaluator entry its metric does not implement: what its module's own check names
    (`tables`, `documents`, `archives`), the keys outside its `OPTIONS`, or past its signature. A task naming any
    is not runnable here rather than mis-scored (the metric refuses them at run time too)."""
    options = options or {}
    for module in MODULES:
        if func in module.METRICS and hasattr(module, "unsupported_options"):
            return module.unsupported_options(func, options)
    if func in OPTIONS:
        return unknown_options(options, OPTIONS[func])
    return _beyond_signature(METRICS[func], options) if func in METRICS else []
