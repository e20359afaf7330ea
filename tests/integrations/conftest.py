"""Keep the integration tests offline: LiteLLM reads its bundled model cost map."""

import os

# Read at LiteLLM's import; without it LiteLLM fetches the map from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
