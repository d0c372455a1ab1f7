"""Text that must stay safe and bounded wherever it is shown to a model: head + tail cuts with the cut said
(`bounded`), and chat-template control tokens kept inert (`control_tokens`). Leaves."""
